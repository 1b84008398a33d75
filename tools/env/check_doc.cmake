# SPDX-License-Identifier: MIT
# Fails when docs/environment.md does not contain the registry table starscream-env prints.
execute_process(COMMAND ${TOOL} --markdown OUTPUT_VARIABLE table RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "starscream-env failed (${rc})")
endif()
file(READ ${DOC} doc)
string(FIND "${doc}" "${table}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "docs/environment.md is out of date: regenerate its table with "
                      "build/bin/starscream-env --markdown")
endif()
