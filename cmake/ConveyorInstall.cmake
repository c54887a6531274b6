# install(EXPORT) and a config-version file, so that another project can
#   find_package(conveyor 0.1 REQUIRED)
#   target_link_libraries(app PRIVATE conveyor::sync)   # or conveyor::framework, conveyor::prometheus
include(CMakePackageConfigHelpers)

set(installed_targets conveyor_sync conveyor_framework conveyor_stages)
set(installed_headers sync/include/conveyor framework/include/conveyor stages/include/conveyor)
set(CONVEYOR_WITH_PROMETHEUS OFF)
if(TARGET conveyor_prometheus)
  set(CONVEYOR_WITH_PROMETHEUS ON)
  list(APPEND installed_targets conveyor_prometheus)
  list(APPEND installed_headers framework/prometheus/include/conveyor)
endif()

install(TARGETS ${installed_targets}
  EXPORT conveyorTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${installed_headers}
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
