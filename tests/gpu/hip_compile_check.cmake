# CI's HIP compile check: when a hipcc is installed, ctest runs
# tests/gpu/check_hip_compile.sh, which compiles every GPU source for gfx90a and gfx940 without
# running it. Included from cmake/GpuBackend.cmake at configure time for every backend choice
# (a CUDA or host-only build still checks that the HIP build compiles).
find_program(SSC_HIPCC hipcc PATHS /opt/rocm/bin)
if(SSC_HIPCC)
  add_test(NAME gpu.hip_compile_check
           COMMAND ${CMAKE_SOURCE_DIR}/tests/gpu/check_hip_compile.sh ${SSC_HIPCC})
  set_tests_properties(gpu.hip_compile_check PROPERTIES TIMEOUT 900 LABELS "gpu;compile")
else()
  message(STATUS "tests/gpu: no hipcc; the HIP compile check is not registered")
endif()
