# SPDX-License-Identifier: MIT
# Picks the GPU backend. auto: hip where a ROCm >= 6 hipcc is installed, cuda where nvcc is,
# none otherwise. The host backend is always built: it is how CI tests every algorithm.
set(STARSCREAM_GPU_BACKEND none)
if(STARSCREAM_GPU STREQUAL "auto")
  find_program(_ssc_hipcc hipcc PATHS /opt/rocm/bin)
  set(_ssc_rocm_ok FALSE)
  if(_ssc_hipcc)
    execute_process(COMMAND ${_ssc_hipcc} --version OUTPUT_VARIABLE _ssc_hipv ERROR_QUIET)
    if(_ssc_hipv MATCHES "HIP version: ([0-9]+)" AND CMAKE_MATCH_1 GREATER_EQUAL 6)
      set(_ssc_rocm_ok TRUE)
    endif()
  endif()
  find_program(_ssc_nvcc nvcc PATHS /usr/local/cuda/bin)
  if(_ssc_rocm_ok)
    set(STARSCREAM_GPU_BACKEND hip)
  elseif(_ssc_nvcc)
    set(STARSCREAM_GPU_BACKEND cuda)
  endif()
elseif(STARSCREAM_GPU MATCHES "^(cuda|hip|none)$")
  set(STARSCREAM_GPU_BACKEND ${STARSCREAM_GPU})
else()
  message(FATAL_ERROR "STARSCREAM_GPU must be auto, cuda, hip or none (got '${STARSCREAM_GPU}')")
endif()
message(STATUS "Starscream GPU backend: ${STARSCREAM_GPU_BACKEND}")

# ---------------------------------------------------------------- GPU backend build
# Device code (src/kernels/gpu, HIP C++) goes into the object library ssc_gpu, compiled by nvcc
# (-x cu, sm_90) or hipcc (gfx90a/gfx940/gfx942). The host half of the backend
# (src/device/gpu, transports/usr, transports/xgmi) is ordinary C++ against the runtime API and
# joins starscream_objs. This file is included before the library targets exist, so the wiring
# is deferred to the end of the top-level CMakeLists (cmake_language(DEFER), CMake >= 3.19).
if(STARSCREAM_GPU_BACKEND STREQUAL "hip")
  include(CheckLanguage)
  check_language(HIP)
  if(NOT CMAKE_HIP_COMPILER)
    message(STATUS "Starscream GPU backend: hip requested but no HIP compiler usable by CMake; "
                   "building the host backend only")
    set(STARSCREAM_GPU_BACKEND none)
  else()
    if(NOT DEFINED CMAKE_HIP_ARCHITECTURES)
      set(CMAKE_HIP_ARCHITECTURES gfx90a gfx940 gfx942)
    endif()
    enable_language(HIP)
    find_package(hip CONFIG QUIET)
  endif()
elseif(STARSCREAM_GPU_BACKEND STREQUAL "cuda")
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  # CMake 3.25 predates nvcc's C++20 support and, with CMAKE_CXX_STANDARD 20 inherited as the
  # CUDA dialect, refuses to generate. nvcc >= 12 takes -std=c++20: teach CMake the flag.
  if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION AND CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_COMPILE_FEATURES cuda_std_20)
    list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
  endif()
endif()
# The HIP compile check runs in CI whatever backend this build uses (tests/gpu).
if(STARSCREAM_BUILD_TESTS)
  include(${CMAKE_SOURCE_DIR}/tests/gpu/hip_compile_check.cmake)
  # The script compiles against the source tree's include/; the generated
  # starscream/version.h lives in the build tree (CMakeLists.txt): the compilers find it
  # through CPATH.
  if(TEST gpu.hip_compile_check)
    set_property(TEST gpu.hip_compile_check APPEND PROPERTY ENVIRONMENT_MODIFICATION
                 "CPATH=path_list_prepend:${SSC_GENERATED_INCLUDE_DIR}")
  endif()
endif()
# What GPU programs (tests/gpu, perf) need besides the library: the runtime and which one it is.
if(STARSCREAM_GPU_BACKEND STREQUAL "cuda")
  set(SSC_GPU_RUNTIME CUDA::cudart)
  set(SSC_GPU_DEFINE STARSCREAM_GPU_CUDA=1)
elseif(STARSCREAM_GPU_BACKEND STREQUAL "hip")
  set(SSC_GPU_RUNTIME hip::host)
  set(SSC_GPU_DEFINE STARSCREAM_GPU_HIP=1)
endif()

set(SSC_GPU_DEVICE_SOURCES src/kernels/gpu/copy_kernel.cu src/kernels/gpu/plan_kernel.cu
  src/kernels/gpu/sym_kernel.cu src/kernels/gpu/attention_kernel.cu src/kernels/gpu/gemm_fused_kernel.cu
  src/kernels/gpu/attention_exchange.cu src/kernels/gpu/attention_prefill_kernel.cu
  src/kernels/gpu/kernel_timing.cu)
set(SSC_GPU_HOST_SOURCES
  src/device/gpu/gpu_backend.cc
  src/device/gpu/gpu_census.cc
  src/device/gpu/gpu_launch_order.cc
  src/device/gpu/gpu_memory_access.cc
  src/device/gpu/gpu_connections.cc
  src/device/gpu/gpu_net.cc
  src/device/gpu/gpu_peer_memory.cc
  src/device/gpu/gpu_plan_cache.cc
  src/device/gpu/gpu_registry.cc
  src/device/gpu/gpu_runtime_info.cc
  src/device/gpu/gpu_symmetric.cc
  src/device/gpu/gpu_timing.cc
  src/ops/attention/gpu_ops.cc
  src/ops/attention/gpu_prefill.cc
  src/ops/attention/gpu_exchange.cc
  src/ops/gemm/gpu_gemm.cc
  src/ops/gemm/gpu_gemm_ce.cc
  src/ops/gemm/gpu_gemm_fused.cc
  src/ops/gemm/gpu_gemm_probe.cc
  transports/usr/ipc_segment.cc
  transports/xgmi/peer_link.cc)

function(_ssc_gpu_attach)
  if(STARSCREAM_GPU_BACKEND STREQUAL "none")
    return()
  endif()
  set(_dev)
  foreach(_s IN LISTS SSC_GPU_DEVICE_SOURCES)
    list(APPEND _dev ${CMAKE_SOURCE_DIR}/${_s})
  endforeach()
  set(_host)
  foreach(_s IN LISTS SSC_GPU_HOST_SOURCES)
    list(APPEND _host ${CMAKE_SOURCE_DIR}/${_s})
  endforeach()
  # The symmetric kernels of each data type in a translation unit of their own (12 of them): a
  # parallel build then compiles them on as many cores (one nvcc took minutes over all 192).
  foreach(_d RANGE 0 11)
    set(_gen ${CMAKE_BINARY_DIR}/generated/sym_kernel_dtype_${_d}.cu)
    file(CONFIGURE OUTPUT ${_gen} CONTENT
         "// Generated by cmake/GpuBackend.cmake.\n#define SSC_SYM_DTYPE ${_d}\n#include \"src/kernels/gpu/sym_kernel_dtype.cu\"\n")
    list(APPEND _dev ${_gen})
  endforeach()
  add_library(ssc_gpu OBJECT ${_dev})
  target_include_directories(ssc_gpu PRIVATE ${CMAKE_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/include)
  if(STARSCREAM_GPU_BACKEND STREQUAL "cuda")
    set_source_files_properties(${_dev} PROPERTIES LANGUAGE CUDA)
    set_target_properties(ssc_gpu PROPERTIES CUDA_STANDARD 20 POSITION_INDEPENDENT_CODE ON)
    # convert.h's constexpr rounding templates are the single definition of fp16/bf16/fp8
    # rounding; nvcc calls them from device code only with relaxed constexpr.
    target_compile_options(ssc_gpu PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -Xcompiler=-fvisibility=hidden>)
    # fmt 9 turns its constexpr off under nvcc (FMT_USE_CONSTEXPR) but keeps its C++20 consteval
    # format-string check, which then cannot compile (SSC_GPU_FAIL's messages go through it). On
    # for every CUDA source of the target: it configures fmt as in the g++-compiled sources,
    # where fmt's own detection turns it on, and the sources that never include fmt do not see
    # it. HIP's clang needs nothing.
    target_compile_definitions(ssc_gpu PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:FMT_USE_CONSTEXPR=1>)
  else()
    set_source_files_properties(${_dev} PROPERTIES LANGUAGE HIP)
    set_target_properties(ssc_gpu PROPERTIES HIP_STANDARD 20 POSITION_INDEPENDENT_CODE ON)
  endif()
  target_compile_definitions(ssc_gpu PRIVATE ${SSC_GPU_DEFINE})
  target_sources(starscream_objs PRIVATE ${_host})
  target_compile_definitions(starscream_objs PRIVATE STARSCREAM_HAVE_GPU=1 ${SSC_GPU_DEFINE})
  target_link_libraries(starscream_objs PUBLIC ${SSC_GPU_RUNTIME})
  # The vendor BLAS of the GEMM ops (src/ops/gemm): cuBLASLt ships with every CUDA toolkit;
  # hipBLASLt is a separate ROCm package, and a HIP build without it still builds, its GEMM ops
  # refusing at run time (sscGemmCreate: sscInvalidUsage, docs/gemm.md).
  if(STARSCREAM_GPU_BACKEND STREQUAL "cuda")
    target_link_libraries(starscream_objs PUBLIC CUDA::cublasLt)
    target_compile_definitions(starscream_objs PRIVATE STARSCREAM_HAVE_BLASLT=1)
  else()
    find_package(hipblaslt CONFIG QUIET)
    if(TARGET roc::hipblaslt)
      target_link_libraries(starscream_objs PUBLIC roc::hipblaslt)
      target_compile_definitions(starscream_objs PRIVATE STARSCREAM_HAVE_BLASLT=1)
    else()
      message(STATUS "Starscream: hipBLASLt not found; the GEMM ops will refuse at run time")
    endif()
  endif()
  # The device objects join both libraries next to starscream_objs' own.
  target_sources(starscream PRIVATE $<TARGET_OBJECTS:ssc_gpu>)
  target_sources(starscream_static PRIVATE $<TARGET_OBJECTS:ssc_gpu>)
  # Deferred calls may not add subdirectories; the GPU programs' file is written to be included.
  if(STARSCREAM_BUILD_TESTS)
    include(${CMAKE_SOURCE_DIR}/tests/gpu/CMakeLists.txt)
  endif()
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL _ssc_gpu_attach)
