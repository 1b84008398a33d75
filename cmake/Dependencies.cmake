# SPDX-License-Identifier: MIT
# Platform libraries (Debian packages; scripts/install-deps.sh installs them).
find_package(Threads REQUIRED)
find_package(fmt REQUIRED)
find_package(nlohmann_json 3.9 REQUIRED)
find_package(PkgConfig REQUIRED)

# hwloc and libnuma feed topology discovery; rocm-smi is optional (absent on NVIDIA machines).
pkg_check_modules(HWLOC IMPORTED_TARGET hwloc)
find_library(NUMA_LIBRARY numa)
find_path(NUMA_INCLUDE_DIR numa.h)
find_library(ROCM_SMI_LIBRARY rocm_smi64 PATHS /opt/rocm/lib)
find_path(ROCM_SMI_INCLUDE_DIR rocm_smi/rocm_smi.h PATHS /opt/rocm/include)

find_package(MPI COMPONENTS C CXX)
find_package(CLI11 CONFIG)
if(STARSCREAM_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
