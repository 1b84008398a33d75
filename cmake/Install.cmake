# SPDX-License-Identifier: MIT
include(CMakePackageConfigHelpers)
install(TARGETS starscream EXPORT StarscreamTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/starscream DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")
# The version header generated from project(VERSION), next to starscream.h which includes it.
install(FILES ${SSC_GENERATED_INCLUDE_DIR}/starscream/version.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/starscream)
install(EXPORT StarscreamTargets NAMESPACE Starscream::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Starscream)
configure_package_config_file(cmake/StarscreamConfig.cmake.in
  ${CMAKE_BINARY_DIR}/StarscreamConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Starscream)
# Which requested versions find_package(Starscream X.Y) accepts: the same ABI as the SONAME
# (CMakeLists.txt). In 0.x a minor release may break it, so 0.1 satisfies only 0.1.z requests;
# from 1.0 on, any release of the same major version.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(_ssc_compatibility SameMinorVersion)
else()
  set(_ssc_compatibility SameMajorVersion)
endif()
write_basic_package_version_file(${CMAKE_BINARY_DIR}/StarscreamConfigVersion.cmake
  COMPATIBILITY ${_ssc_compatibility})
install(FILES ${CMAKE_BINARY_DIR}/StarscreamConfig.cmake
  ${CMAKE_BINARY_DIR}/StarscreamConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Starscream)
# Relocatable: the .pc file finds the prefix from its own location, so `cmake --install
# --prefix DIR` works without reconfiguring.
file(RELATIVE_PATH SSC_PC_TO_PREFIX "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
configure_file(cmake/starscream.pc.in ${CMAKE_BINARY_DIR}/starscream.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/starscream.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
