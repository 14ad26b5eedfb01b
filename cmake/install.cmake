# `cmake --install`: the libraries, the public headers, the spore program, a CMake package
# (find_package(Spore) -> Spore::core, Spore::spore, Spore::probe) and a pkg-config file.
# NOTE [Installed package] in docs/design.md.
include(CMakePackageConfigHelpers)

# The installed libraries, exported as Spore::<name without "spore_"> (spore itself stays
# Spore::spore). A new library is installed and exported by adding its target to this list.
set(SPORE_INSTALL_LIBRARIES
    spore_core
    spore_format
    spore_graph
    spore
    spore_probe)

foreach(lib ${SPORE_INSTALL_LIBRARIES})
  string(REGEX REPLACE "^spore_" "" export_name ${lib})
  set_target_properties(${lib} PROPERTIES EXPORT_NAME ${export_name})
endforeach()

set(SPORE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Spore)
install(TARGETS ${SPORE_INSTALL_LIBRARIES} EXPORT SporeTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS spore_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/spore DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT SporeTargets NAMESPACE Spore:: DESTINATION ${SPORE_CMAKE_DIR})

# oneDNN is found by its library path (top CMakeLists): the package config looks for it again
# on the consumer's machine, starting from the directory it was found in here.
get_filename_component(SPORE_DNNL_HINT_DIR ${DNNL_LIBRARY} DIRECTORY)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/SporeConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/SporeConfig.cmake INSTALL_DESTINATION ${SPORE_CMAKE_DIR})
# 0.x: a minor version may change the API, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/SporeConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/SporeConfig.cmake ${PROJECT_BINARY_DIR}/SporeConfigVersion.cmake
        DESTINATION ${SPORE_CMAKE_DIR})

# pkg-config: the libraries are static, so Libs names everything they need at link time.
file(RELATIVE_PATH SPORE_PC_TO_PREFIX /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
string(REGEX REPLACE "/$" "" SPORE_PC_TO_PREFIX "${SPORE_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/spore.pc.in ${PROJECT_BINARY_DIR}/spore.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/spore.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
