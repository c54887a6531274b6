# install(EXPORT) and a config-version file, so that another project can
#   find_package(conveyor 0.1 REQUIRED)
#   target_link_libraries(app PRIVATE conveyor::sync)
include(CMakePackageConfigHelpers)

install(TARGETS conveyor_sync conveyor_framework
  EXPORT conveyorTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY sync/include/conveyor framework/include/conveyor
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(conveyor_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/conveyor)
install(EXPORT conveyorTargets
  NAMESPACE conveyor::
  DESTINATION ${conveyor_cmake_dir})

configure_package_config_file(cmake/conveyorConfig.cmake.in
  ${PROJECT_BINARY_DIR}/conveyorConfig.cmake
  INSTALL_DESTINATION ${conveyor_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/conveyorConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/conveyorConfig.cmake
  ${PROJECT_BINARY_DIR}/conveyorConfigVersion.cmake
  DESTINATION ${conveyor_cmake_dir})
