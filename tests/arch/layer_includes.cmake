# SPDX-License-Identifier: MIT
# The build's half of the layer map (cmake/Layers.cmake): a layer's sources compile against a
# root that holds only their layer and the layers below it. Compiled here as a layer's sources
# are (its root, the public and generated headers):
#   - src/core including src/comm/comm.h must fail, for want of the header;
#   - src/comm including src/core/errors.h and src/comm/comm.h must compile;
#   - every layer's root links exactly its own folder and the folders below it.
# Run by ctest as arch.layer_includes with -DCXX=... -DLAYERS_DIR=<build>/layers
# -DSOURCE_DIR=... -DGENERATED_DIR=... -DLAYER_FOLDERS=<folders, bottom first>.
foreach(_v CXX LAYERS_DIR SOURCE_DIR GENERATED_DIR LAYER_FOLDERS)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "layer_includes.cmake: -D${_v}=... is required")
  endif()
endforeach()
string(REPLACE "," ";" LAYER_FOLDERS "${LAYER_FOLDERS}")
set(_work ${CMAKE_CURRENT_BINARY_DIR}/layer_includes)
file(MAKE_DIRECTORY ${_work})

function(compile_in layer text out_rc out_err)
  string(REPLACE "/" "_" _name ${layer})
  set(_src ${_work}/${_name}.cc)
  file(WRITE ${_src} "${text}")
  execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only -I${LAYERS_DIR}/${_name}
                          -I${SOURCE_DIR}/include -I${GENERATED_DIR} ${_src}
                  RESULT_VARIABLE _rc ERROR_VARIABLE _err OUTPUT_QUIET)
  set(${out_rc} ${_rc} PARENT_SCOPE)
  set(${out_err} "${_err}" PARENT_SCOPE)
endfunction()

compile_in(src/core "#include \"src/comm/comm.h\"\n" _rc _err)
if(_rc EQUAL 0)
  message(FATAL_ERROR "src/core compiled an include of src/comm/comm.h: the layer roots do not "
                      "hold the layers apart")
elseif(NOT _err MATCHES "src/comm/comm.h(: No such file|' file not found)")  # gcc, clang
  message(FATAL_ERROR "src/core's include of src/comm/comm.h failed, but not for want of the "
                      "header:\n${_err}")
endif()

compile_in(src/comm "#include \"src/core/errors.h\"\n#include \"src/comm/comm.h\"\n" _rc _err)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "src/comm cannot include src/core/errors.h and src/comm/comm.h:\n${_err}")
endif()

set(_below)
foreach(_layer IN LISTS LAYER_FOLDERS)
  list(APPEND _below ${_layer})
  string(REPLACE "/" "_" _name ${_layer})
  file(GLOB_RECURSE _links LIST_DIRECTORIES true RELATIVE ${LAYERS_DIR}/${_name}
       ${LAYERS_DIR}/${_name}/*)
  set(_seen)
  foreach(_l IN LISTS _links)
    if(IS_SYMLINK ${LAYERS_DIR}/${_name}/${_l})
      list(APPEND _seen ${_l})
    endif()
  endforeach()
  list(SORT _seen)
  set(_want ${_below})
  list(SORT _want)
  if(NOT _seen STREQUAL _want)
    message(FATAL_ERROR "layer ${_layer}: its root links [${_seen}], not [${_want}]")
  endif()
endforeach()
message(STATUS "layer roots: src/core cannot include src/comm; src/comm includes src/core; "
               "each root holds its layer and those below")
