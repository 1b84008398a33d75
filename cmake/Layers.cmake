# SPDX-License-Identifier: MIT
# The layer map of docs/design.md, bottom first: a folder of the tree and the object library that
# compiles it ("-" for a layer of headers only). scripts/check_layers.py reads this list too, so
# the build and the include check hold one order.
set(SSC_LAYER_MAP
  src/core         ssc_core
  src/platform     -
  src/topology     ssc_topology
  src/collectives  ssc_collectives
  transports       ssc_transports
  src/kernels      ssc_kernels
  src/device       ssc_device
  tuner            ssc_tuner
  src/comm         ssc_comm
  src/api          ssc_api
  src/ops          ssc_ops
  src/nccl         -
)

# ssc_layer_includes(target folder): target's sources see the layer `folder` and those below it.
function(ssc_layer_includes target folder)
  string(REPLACE "/" "_" _name ${folder})
  if(NOT IS_DIRECTORY ${PROJECT_BINARY_DIR}/layers/${_name})
    message(FATAL_ERROR "ssc_layer_includes: ${folder} is not a layer of cmake/Layers.cmake")
  endif()
  target_include_directories(${target} PRIVATE
    $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/layers/${_name}>)
endfunction()

# For each layer, bottom first:
#  - its root. The build enforces the map through include paths. Every file includes the tree's
#    headers by their path from the root ("src/core/errors.h"), so a layer's sources get, instead
#    of the root, a generated root of symbolic links to their own folder and the folders below it
#    (<build>/layers/src_comm/ for src/comm). An include that goes up a layer then does not
#    compile; the public headers (include/) and the generated ones are seen by every layer.
#  - its object library, which links the layer below it: what a layer needs from outside (hwloc,
#    the GPU runtime) reaches the layers above, never the other way.
# SSC_LAYERS: the object libraries in map order; libstarscream.so and its static twin take them
# all.
set(SSC_LAYERS)
set(_folders)
# Made afresh at every configure, so that a layer taken out of the map or a folder moved leaves no
# link behind (the removal deletes the links, never what they point to).
file(REMOVE_RECURSE ${PROJECT_BINARY_DIR}/layers)
set(_below "")
list(LENGTH SSC_LAYER_MAP _n)
math(EXPR _last "${_n} - 1")
foreach(_i RANGE 0 ${_last} 2)
  math(EXPR _j "${_i} + 1")
  list(GET SSC_LAYER_MAP ${_i} _folder)
  list(GET SSC_LAYER_MAP ${_j} _target)
  list(APPEND _folders ${_folder})
  string(REPLACE "/" "_" _name ${_folder})
  set(_root ${PROJECT_BINARY_DIR}/layers/${_name})
  foreach(_f IN LISTS _folders)
    get_filename_component(_parent ${_root}/${_f} DIRECTORY)
    file(MAKE_DIRECTORY ${_parent})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${_f} ${_root}/${_f} SYMBOLIC)
  endforeach()
  if(_target STREQUAL "-")
    continue()
  endif()
  add_library(${_target} OBJECT)
  target_include_directories(${_target} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<BUILD_INTERFACE:${SSC_GENERATED_INCLUDE_DIR}>)
  ssc_layer_includes(${_target} ${_folder})
  ssc_gpu_layer(${_target})  # cmake/GpuBackend.cmake
  if(_below)
    target_link_libraries(${_target} PUBLIC ${_below})
  else()
    target_link_libraries(${_target} PUBLIC fmt::fmt nlohmann_json::nlohmann_json Threads::Threads
                          ${CMAKE_DL_LIBS} rt)
  endif()
  set(_below ${_target})
  list(APPEND SSC_LAYERS ${_target})
endforeach()
unset(_folders)
unset(_below)
unset(_n)
unset(_last)
