# SPDX-License-Identifier: MIT
# Fails when docs/environment.md does not contain the tables starscream-env prints: the
# registry's (--markdown) and the external inputs' (--external).
file(READ ${DOC} doc)
foreach(option --markdown --external)
  execute_process(COMMAND ${TOOL} ${option} OUTPUT_VARIABLE table RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "starscream-env ${option} failed (${rc})")
  endif()
  string(FIND "${doc}" "${table}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "docs/environment.md is out of date: regenerate its table with "
                        "build/bin/starscream-env ${option}")
  endif()
endforeach()
