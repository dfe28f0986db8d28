# cmake/packaging.cmake - the two ways, besides find_package(dezero), that an installed dezero
# is found and shipped (included by the top-level CMakeLists.txt, after the install rules):
#   - dezero.pc for pkg-config, installed into <libdir>/pkgconfig next to the library;
#   - the Debian package libdezero-dev_<version>_<arch>.deb, made by `cpack -G DEB` in the build
#     folder: the library, the public headers, the CMake package and dezero.pc under /usr.
# tests/packaging checks both against an installed tree and an unpacked .deb.

# --- pkg-config ---------------------------------------------------------------------------
# The paths in dezero.pc are relative to the .pc file itself (${pcfiledir}), so one file serves
# `cmake --install --prefix <anywhere>`, DESTDIR installs and the .deb. Absolute install dirs
# (-DCMAKE_INSTALL_LIBDIR=/opt/...) are written as they are.
set(dezero_pc_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(IS_ABSOLUTE "${dezero_pc_dir}")
  set(DEZERO_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(DEZERO_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  file(RELATIVE_PATH dezero_pc_up "/dezero-prefix/${dezero_pc_dir}" "/dezero-prefix")  # ../.. for lib/pkgconfig
  string(REGEX REPLACE "/$" "" dezero_pc_up "${dezero_pc_up}")
  set(DEZERO_PC_PREFIX "\${pcfiledir}/${dezero_pc_up}")
  set(DEZERO_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(DEZERO_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(DEZERO_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
# The compile flags of dezero::dezero's interface: the include folder, and DEZERO_WITH_CUDA=1
# in a CUDA build (dezero/CMakeLists.txt's PUBLIC definition). Nothing of Eigen's: no public
# header includes it (the comment in dezero.pc.in says more).
set(DEZERO_PC_CFLAGS "-I\${includedir}")
if(DEZERO_WITH_CUDA)
  string(APPEND DEZERO_PC_CFLAGS " -DDEZERO_WITH_CUDA=1")
endif()
# What a static libdezero.a needs at link time (pkg-config --static); a shared libdezero.so
# brings its own NEEDED libraries, so there the two fields stay empty.
set(DEZERO_PC_REQUIRES_PRIVATE "")
set(DEZERO_PC_LIBS_PRIVATE "")
if(NOT BUILD_SHARED_LIBS)
  set(DEZERO_PC_REQUIRES_PRIVATE "zlib")
  set(dezero_pc_libs ${OpenMP_CXX_FLAGS} -pthread)
  if(DEZERO_WITH_ONEDNN)
    list(APPEND dezero_pc_libs -ldnnl)
  endif()
  if(DEZERO_WITH_CUDA)
    list(APPEND dezero_pc_libs -L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -lrt)
  endif()
  foreach(lib ${CMAKE_DL_LIBS})
    list(APPEND dezero_pc_libs -l${lib})
  endforeach()
  list(JOIN dezero_pc_libs " " DEZERO_PC_LIBS_PRIVATE)
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/dezero.pc.in ${CMAKE_CURRENT_BINARY_DIR}/dezero.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/dezero.pc DESTINATION ${dezero_pc_dir})
# dezero-onnx.pc: libdezero_onnx, when the build has it (a shared one; a static libdezero_onnx.a
# would also need libonnx and protobuf under Libs.private).
if(DEZERO_WITH_ONNX)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/dezero-onnx.pc.in ${CMAKE_CURRENT_BINARY_DIR}/dezero-onnx.pc @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/dezero-onnx.pc DESTINATION ${dezero_pc_dir})
endif()

# --- the Debian package (cpack -G DEB) ----------------------------------------------------
# Only for a top-level build: a project that adds dezero with add_subdirectory or FetchContent
# packages itself.
if(NOT PROJECT_IS_TOP_LEVEL)
  return()
endif()
set(CPACK_VERBATIM_VARIABLES ON)  # the values below reach CPackConfig.cmake as written
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME libdezero-dev)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "dezero-cpp")
set(DEZERO_DEB_MAINTAINER "dezero-cpp maintainers" CACHE STRING "The .deb's Maintainer field (name <email>)")
set(CPACK_PACKAGE_CONTACT "${DEZERO_DEB_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "DeZero (Deep Learning from Scratch 3) as a C++17 library")
set(CPACK_PACKAGE_DESCRIPTION
  "dezero-cpp is the define-by-run deep-learning framework of the book Deep Learning from Scratch 3 as a
C++17 library: Variable and Function record the graph as the program runs, backward works to any order,
and tensors live in host memory or, when the library was built with CUDA and a GPU is present, on an
NVIDIA GPU (cuBLAS, cuDNN, cuRAND and NVRTC are loaded at run time, so the package does not depend on them).
This package holds the shared library, the public headers, the CMake package (find_package(dezero))
and dezero.pc for pkg-config.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
# libdezero-dev_<version>_<arch>.deb: Debian's own naming (no revision is set).
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
# Depends is computed by dpkg-shlibdeps from what libdezero.so NEEDs (libc6, libstdc++6, libgomp1,
# zlib1g, libdnnl2 with oneDNN; libonnx1 and libprotobuf32 for libdezero_onnx, Open MPI's
# libraries for libdezero_mn): never written by hand. The CUDA libraries are not NEEDed (the
# runtime is linked statically, cuBLAS/cuRAND/NVRTC/cuDNN are dlopen()ed), nor are libcurl,
# libcrypto, libjpeg and libarchive, so the package requires none of them; tests/packaging checks it.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The package is made from an installed tree, not from the source folder: keep the source
# package (make package_source) to the sources too.
set(CPACK_SOURCE_GENERATOR TGZ)
set(CPACK_SOURCE_IGNORE_FILES "/\\.git/" "/build[^/]*/" "/gpu-bundle/" "/__pycache__/")
include(CPack)
