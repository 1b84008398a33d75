# SPDX-License-Identifier: MIT
# CI's HIP compile check: when a hipcc is installed, ctest runs
# tests/gpu/check_hip_compile.sh, which compiles every GPU source for gfx90a and gfx940 without
# running it. Included from cmake/GpuBackend.cmake at configure time for every backend choice
# (a CUDA or host-only build still checks that the HIP build compiles).
find_program(SSC_HIPCC hipcc PATHS /opt/rocm/bin)
if(SSC_HIPCC)
  add_test(NAME gpu.hip_compile_check
           COMMAND ${CMAKE_SOURCE_DIR}/tests/gpu/check_hip_compile.sh ${SSC_HIPCC})
  # The script runs its compiles in parallel on every core of the configuring machine (nproc,
  # as ProcessorCount counts them): ctest reserves that many (PROCESSORS) and the script gets the
  # same number, so ctest -jN runs nothing else on those cores meanwhile.
  include(ProcessorCount)
  ProcessorCount(_ssc_cores)
  if(_ssc_cores EQUAL 0)
    set(_ssc_cores 1)
  endif()
  set_tests_properties(gpu.hip_compile_check PROPERTIES TIMEOUT 900 LABELS "gpu;compile"
                       PROCESSORS ${_ssc_cores} ENVIRONMENT "SSC_HIP_CHECK_JOBS=${_ssc_cores}")
else()
  ssc_skip_suite(gpu.hip_compile_check "no hipcc: the HIP build's compile check (every GPU source)")
endif()
