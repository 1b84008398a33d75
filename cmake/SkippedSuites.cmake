# SPDX-License-Identifier: MIT
# Test suites this configuration cannot run because an optional dependency is missing (MPI,
# Python, nccl.h, hipcc, torch). Fewer tests must never look like all of them passing: each such
# suite is said at configure time, listed again at the end of it, and registered as a ctest test
# skipped.NAME that prints the reason and exits with 77 (SKIP_RETURN_CODE), so ctest's summary
# shows it among the tests that did not run. build/skipped-suites.txt keeps the list with the
# reasons; scripts/test.sh prints it after ctest.

# ssc_skip_suite(NAME REASON): NAME is the suite as ctest would have named it (mpi.integration,
# nccl, ...); REASON says what is missing and what it would have run (no semicolons).
function(ssc_skip_suite name reason)
  if(NOT STARSCREAM_BUILD_TESTS)
    return()
  endif()
  set_property(GLOBAL APPEND PROPERTY SSC_SKIPPED_SUITES "${name}: ${reason}")
  message(STATUS "Tests: skipping ${name}: ${reason}")
  add_test(NAME skipped.${name}
           COMMAND sh -c "printf 'skipped: %s\\n' \"$1\"; exit 77" sh "${reason}")
  # quick too: the edit loop's summary shows what it cannot run.
  set_tests_properties(skipped.${name} PROPERTIES SKIP_RETURN_CODE 77 LABELS "quick;skipped")
endfunction()

# The summary, at the end of configuration (tests/CMakeLists.txt defers it past every suite,
# the GPU programs' included).
function(ssc_report_skipped_suites)
  get_property(skipped GLOBAL PROPERTY SSC_SKIPPED_SUITES)
  set(text "")
  foreach(line IN LISTS skipped)
    string(APPEND text "${line}\n")
  endforeach()
  file(WRITE ${CMAKE_BINARY_DIR}/skipped-suites.txt "${text}")
  list(LENGTH skipped count)
  if(count EQUAL 0)
    message(STATUS "Tests: every suite is registered (no optional dependency is missing)")
    return()
  endif()
  message(STATUS "Tests: ${count} suite(s) skipped; ctest reports each as skipped.NAME:")
  foreach(line IN LISTS skipped)
    message(STATUS "  ${line}")
  endforeach()
endfunction()
