# Install rules (`cmake --install build --prefix DIR`): the program, the
# Catalyst adaptor, the library and its public headers with an exported
# CMake package (find_package(granular-mpm)) and a pkg-config file, the
# decks, the post-processing scripts, the job scripts and the docs.
# docs/install.md; tests/test_install.py installs into a temporary prefix.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(MPM_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/granular-mpm)
set(MPM_INSTALL_DATADIR ${CMAKE_INSTALL_DATADIR}/granular-mpm)
set(MPM_INSTALL_MODULEDIR ${CMAKE_INSTALL_LIBDIR}/granular-mpm)
set(MPM_INSTALL_DOCDIR ${CMAKE_INSTALL_DATAROOTDIR}/doc/granular-mpm)

install(TARGETS mpm_run RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS mpm mpmkernels EXPORT granular-mpm-targets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/mpm DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
if(MPM_CATALYST)
  # found by the program at <bindir>/<relative path> (src/io/catalyst.c)
  install(TARGETS mpm_catalyst LIBRARY DESTINATION ${MPM_INSTALL_MODULEDIR})
  file(RELATIVE_PATH MPM_MODULE_REL ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR} ${CMAKE_INSTALL_PREFIX}/${MPM_INSTALL_MODULEDIR})
  target_compile_definitions(mpm PRIVATE MPM_CATALYST_MODULE_INSTALLED="${MPM_MODULE_REL}")
endif()

install(DIRECTORY inputs/ DESTINATION ${MPM_INSTALL_DATADIR}/inputs)
install(DIRECTORY postproc/ DESTINATION ${MPM_INSTALL_DATADIR}/postproc PATTERN "__pycache__" EXCLUDE)
install(DIRECTORY jobscripts/ DESTINATION ${MPM_INSTALL_DATADIR}/jobscripts)
install(DIRECTORY docs/ DESTINATION ${MPM_INSTALL_DOCDIR})
install(FILES README.md DESTINATION ${MPM_INSTALL_DOCDIR})
install(FILES docs/man/granular-mpm.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1) # docs/man/make_manpage.py

# CMake package: the targets granular_mpm::mpm and granular_mpm::mpmkernels
install(EXPORT granular-mpm-targets NAMESPACE granular_mpm:: DESTINATION ${MPM_INSTALL_CMAKEDIR})
configure_package_config_file(cmake/granular-mpm-config.cmake.in ${CMAKE_BINARY_DIR}/granular-mpm-config.cmake INSTALL_DESTINATION ${MPM_INSTALL_CMAKEDIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/granular-mpm-config-version.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/granular-mpm-config.cmake ${CMAKE_BINARY_DIR}/granular-mpm-config-version.cmake DESTINATION ${MPM_INSTALL_CMAKEDIR})

# pkg-config: `pkg-config --cflags --libs granular-mpm`.  The libraries are
# static, so their dependencies are in Libs (PETSc through Requires); the
# prefix is relative to the .pc file, so the install can be moved.
set(MPM_PC_HDF5_LIBS "")
foreach(lib ${HDF5_C_LIBRARIES})
  if(NOT lib MATCHES "/lib(dl|m)\\.(a|so)$") # added once below as -ldl -lm
    string(APPEND MPM_PC_HDF5_LIBS " ${lib}")
  endif()
endforeach()
set(MPM_PC_MPI_LIBS "")
foreach(lib ${MPI_C_LIBRARIES})
  string(APPEND MPM_PC_MPI_LIBS " ${lib}")
endforeach()
set(MPM_PC_HDF5_INCLUDES "")
foreach(dir ${HDF5_INCLUDE_DIRS} ${MPI_C_INCLUDE_DIRS})
  string(APPEND MPM_PC_HDF5_INCLUDES " -I${dir}")
endforeach()
file(RELATIVE_PATH MPM_PC_PREFIX_REL ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
configure_file(cmake/granular-mpm.pc.in ${CMAKE_BINARY_DIR}/granular-mpm.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/granular-mpm.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
