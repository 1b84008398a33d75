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
# Each layer lists its own GPU sources (ssc_gpu_sources, below) in its CMakeLists.txt: device code
# (HIP C++) is compiled by nvcc (-x cu, sm_90) or the HIP compiler (gfx90a/gfx940/gfx942), the
# host half (src/device/gpu, the ops' GPU halves, transports/usr, transports/xgmi) is ordinary C++
# against the runtime API. Both join the layer's object library (cmake/Layers.cmake).
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

# The vendor BLAS of the GEMM ops (src/ops/gemm/gpu_gemm*.cc): cuBLASLt ships
# with every CUDA toolkit; hipBLASLt is a separate ROCm package, and a HIP build without it still
# builds, its GEMM ops refusing at run time (sscGemmCreate: sscInvalidUsage, docs/gemm.md).
set(SSC_GPU_BLAS "")
if(STARSCREAM_GPU_BACKEND STREQUAL "cuda")
  set(SSC_GPU_BLAS CUDA::cublasLt)
elseif(STARSCREAM_GPU_BACKEND STREQUAL "hip")
  find_package(hipblaslt CONFIG QUIET)
  if(TARGET roc::hipblaslt)
    set(SSC_GPU_BLAS roc::hipblaslt)
  else()
    message(STATUS "Starscream: hipBLASLt not found; the GEMM ops will refuse at run time")
  endif()
endif()

# ssc_gpu_layer(target): what every layer's sources are compiled with under a GPU backend
# (cmake/Layers.cmake calls it for each layer).
function(ssc_gpu_layer target)
  if(STARSCREAM_GPU_BACKEND STREQUAL "none")
    return()
  endif()
  target_compile_definitions(${target} PRIVATE STARSCREAM_HAVE_GPU=1 ${SSC_GPU_DEFINE})
  if(STARSCREAM_GPU_BACKEND STREQUAL "cuda")
    set_target_properties(${target} PROPERTIES CUDA_STANDARD 20)
    # convert.h's constexpr rounding templates are the single definition of fp16/bf16/fp8
    # rounding; nvcc calls them from device code only with relaxed constexpr.
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -Xcompiler=-fvisibility=hidden>)
    # fmt 9 turns its constexpr off under nvcc (FMT_USE_CONSTEXPR) but keeps its C++20 consteval
    # format-string check, which then cannot compile (SSC_GPU_FAIL's messages go through it). On
    # for every CUDA source: it configures fmt as in the g++-compiled sources, where fmt's own
    # detection turns it on, and the sources that never include fmt do not see it. HIP's clang
    # needs nothing.
    target_compile_definitions(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:FMT_USE_CONSTEXPR=1>)
  else()
    set_target_properties(${target} PROPERTIES HIP_STANDARD 20)
  endif()
endfunction()

# ssc_gpu_sources(target [DEVICE file...] [HOST file...] [BLAS]): a layer's GPU sources, built
# only under a GPU backend; paths relative to the calling CMakeLists.txt. DEVICE: device code;
# HOST: C++ against the runtime API; BLAS: the layer calls the vendor BLAS (and sees
# STARSCREAM_HAVE_BLASLT where the build has one). The layer links the runtime, so the layers
# above it do too.
function(ssc_gpu_sources target)
  if(STARSCREAM_GPU_BACKEND STREQUAL "none")
    return()
  endif()
  cmake_parse_arguments(ARG "BLAS" "" "DEVICE;HOST" ${ARGN})
  list(TRANSFORM ARG_DEVICE PREPEND ${CMAKE_CURRENT_SOURCE_DIR}/ REGEX "^[^/]")
  list(TRANSFORM ARG_HOST PREPEND ${CMAKE_CURRENT_SOURCE_DIR}/ REGEX "^[^/]")
  if(ARG_DEVICE)
    if(STARSCREAM_GPU_BACKEND STREQUAL "cuda")
      set_source_files_properties(${ARG_DEVICE} TARGET_DIRECTORY ${target} PROPERTIES LANGUAGE CUDA)
    else()
      set_source_files_properties(${ARG_DEVICE} TARGET_DIRECTORY ${target} PROPERTIES LANGUAGE HIP)
    endif()
  endif()
  target_sources(${target} PRIVATE ${ARG_DEVICE} ${ARG_HOST})
  target_link_libraries(${target} PUBLIC ${SSC_GPU_RUNTIME})
  if(ARG_BLAS AND SSC_GPU_BLAS)
    target_link_libraries(${target} PUBLIC ${SSC_GPU_BLAS})
    target_compile_definitions(${target} PRIVATE STARSCREAM_HAVE_BLASLT=1)
  endif()
endfunction()
