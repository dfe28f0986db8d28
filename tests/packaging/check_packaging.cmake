# check_packaging.cmake - CTest driver for tests/packaging: an installed dezero as programs outside
# the build see it. One MODE per test (tests/packaging/CMakeLists.txt registers them):
#
#   install       cmake --install the build into PREFIX (the fixture of the next two)
#   pkgconfig     dezero.pc in PREFIX: its version, its paths, then tests/packaging/pkgconfig's
#                 plain Makefile builds a one-file program with `pkg-config --cflags --libs dezero`
#                 and the program runs (against PREFIX's libdezero.so, through its RUNPATH)
#   find_version  configures tests/packaging/find_version with find_package(dezero REQUEST REQUIRED)
#                 against PREFIX; EXPECT=found or EXPECT=refused
#   deb           cpack -G DEB in the build (the package written under WORK), checks the .deb's
#                 fields (computed Depends, no CUDA library), its files and its library's NEEDED
#                 entries, unpacks it with dpkg-deb -x into WORK/root and builds tests/consumer
#                 against that root alone (tests/consumer/check_consumer.cmake with PREFIX)
#
#   cmake -DMODE=<mode> -DDEZERO_BUILD_DIR=<build> -DSOURCE_ROOT=<repo> -DWORK=<scratch>
#         -DPREFIX=<prefix> -DVERSION=<x.y.z> -DLIBDIR=<lib> [-DCXX=<compiler>] [-DCONFIG=<cfg>]
#         [-DREQUEST=<v> -DEXPECT=found|refused] [-DPKG_CONFIG=<exe>] [-DPKG_CONFIG_FLAGS=--static]
#         [-DMAKE=<exe>] [-DCPACK=<exe>] [-DCPACK_SET=<VAR=VALUE>] [-DDPKG_DEB=<exe>] [-DREADELF=<exe>]
#         [-DPUBLIC_HEADERS=<a|b|...>]
#         -P check_packaging.cmake
# Each test writes only under its own WORK (and the install test under PREFIX), so they run in
# parallel (ctest -j); the deb test holds the build-tree lock, since cpack builds the preinstall target.
foreach(v MODE WORK VERSION)
  if(NOT ${v})
    message(FATAL_ERROR "check_packaging: ${v} is not set")
  endif()
endforeach()
set(config_args "")
if(CONFIG)
  set(config_args --config "${CONFIG}")
endif()
set(cxx_arg "")
if(CXX)
  set(cxx_arg "-DCMAKE_CXX_COMPILER=${CXX}")
endif()

# step(<what> <command>...): runs the command, fails the test with its output if it fails;
# its output is in step_out, its error output in step_err.
function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "check_packaging: ${what} failed (${rc})\n${out}\n${err}")
  endif()
  set(step_out "${out}" PARENT_SCOPE)
  set(step_err "${err}" PARENT_SCOPE)
endfunction()

# regex_escape(<out> <text>): <text> with the regex metacharacters escaped, to match it literally.
function(regex_escape out text)
  string(REGEX REPLACE "([][+.*()^$?|\\])" "\\\\\\1" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

function(fail)
  string(JOIN "" msg ${ARGN})
  message(FATAL_ERROR "check_packaging: ${msg}")
endfunction()

# --- install ----------------------------------------------------------------------------------
if(MODE STREQUAL "install")
  file(REMOVE_RECURSE "${PREFIX}")
  step("install" ${CMAKE_COMMAND} --install "${DEZERO_BUILD_DIR}" --prefix "${PREFIX}" ${config_args})
  foreach(f include/dezero/dezero.hpp include/dezero/version.hpp ${LIBDIR}/pkgconfig/dezero.pc
            ${LIBDIR}/cmake/dezero/dezeroConfig.cmake ${LIBDIR}/cmake/dezero/dezeroConfigVersion.cmake)
    if(NOT EXISTS "${PREFIX}/${f}")
      fail("the install has no ${f}")
    endif()
  endforeach()
  message(STATUS "check_packaging: installed into ${PREFIX}")
  return()
endif()

# --- pkg-config + a plain Makefile ----------------------------------------------------------
if(MODE STREQUAL "pkgconfig")
  file(REMOVE_RECURSE "${WORK}")
  file(MAKE_DIRECTORY "${WORK}")
  # Only the install's .pc folder is searched first; PKG_CONFIG_PATH's other folders stay
  # (a static dezero's Requires.private: zlib), so a dezero.pc elsewhere cannot win.
  set(pc ${CMAKE_COMMAND} -E env "PKG_CONFIG_PATH=${PREFIX}/${LIBDIR}/pkgconfig" ${PKG_CONFIG})
  step("pkg-config --modversion" ${pc} --modversion dezero)
  string(STRIP "${step_out}" got)
  if(NOT got STREQUAL VERSION)
    fail("pkg-config --modversion dezero says '${got}', the project is ${VERSION}")
  endif()
  step("pkg-config --atleast-version ${VERSION}" ${pc} --atleast-version=${VERSION} dezero)
  step("pkg-config --variable=includedir" ${pc} --variable=includedir dezero)
  string(STRIP "${step_out}" includedir)
  step("pkg-config --variable=libdir" ${pc} --variable=libdir dezero)
  string(STRIP "${step_out}" libdir)
  # The .pc's relative paths resolve into the scratch prefix (it was written for /usr/local).
  file(REAL_PATH "${includedir}" includedir_real)
  file(REAL_PATH "${libdir}" libdir_real)
  file(REAL_PATH "${PREFIX}" prefix_real)
  if(NOT includedir_real STREQUAL "${prefix_real}/include" OR NOT EXISTS "${includedir_real}/dezero/version.hpp")
    fail("dezero.pc's includedir ${includedir} is not ${PREFIX}/include")
  endif()
  if(NOT libdir_real STREQUAL "${prefix_real}/${LIBDIR}")
    fail("dezero.pc's libdir ${libdir} is not ${PREFIX}/${LIBDIR}")
  endif()
  step("pkg-config --cflags --libs" ${pc} ${PKG_CONFIG_FLAGS} --cflags --libs dezero)
  string(STRIP "${step_out}" flags)
  message(STATUS "check_packaging: pkg-config --cflags --libs dezero: ${flags}")
  if(NOT flags MATCHES "-ldezero" OR flags MATCHES "[Ee]igen")
    fail("pkg-config --cflags --libs dezero: '${flags}' (want -ldezero, and nothing of Eigen's)")
  endif()
  # dezero-onnx.pc, when the build has dezero::onnx: libdezero_onnx on top of dezero's own flags.
  if(WITH_ONNX)
    if(NOT EXISTS "${PREFIX}/${LIBDIR}/pkgconfig/dezero-onnx.pc")
      fail("the build has dezero::onnx, but ${PREFIX}/${LIBDIR}/pkgconfig has no dezero-onnx.pc")
    endif()
    step("pkg-config --cflags --libs dezero-onnx" ${pc} ${PKG_CONFIG_FLAGS} --cflags --libs dezero-onnx)
    string(STRIP "${step_out}" onnx_flags)
    message(STATUS "check_packaging: pkg-config --cflags --libs dezero-onnx: ${onnx_flags}")
    if(NOT onnx_flags MATCHES "-ldezero_onnx" OR NOT onnx_flags MATCHES "-ldezero( |$)" OR onnx_flags MATCHES "onnx/|protobuf")
      fail("pkg-config --cflags --libs dezero-onnx: '${onnx_flags}' (want -ldezero_onnx -ldezero, nothing of ONNX's)")
    endif()
  endif()
  set(make_vars "PKG_CONFIG=${PKG_CONFIG}" "PKG_CONFIG_FLAGS=${PKG_CONFIG_FLAGS}")
  if(CXX)
    list(APPEND make_vars "CXX=${CXX}")
  endif()
  step("make" ${CMAKE_COMMAND} -E env "PKG_CONFIG_PATH=${PREFIX}/${LIBDIR}/pkgconfig"
       ${MAKE} -C "${WORK}" -f "${SOURCE_ROOT}/tests/packaging/pkgconfig/Makefile" ${make_vars})
  message(STATUS "${step_out}${step_err}")
  # Without LD_LIBRARY_PATH: the program finds the prefix's libdezero.so through its RUNPATH.
  step("run" ${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH "${WORK}/pkgconfig_consumer")
  regex_escape(version_re "${VERSION}")
  if(NOT step_out MATCHES "dezero ${version_re} " OR NOT step_out MATCHES "all checks passed")
    fail("unexpected output:\n${step_out}")
  endif()
  message(STATUS "${step_out}")
  return()
endif()

# --- find_package(dezero <version>) ---------------------------------------------------------
if(MODE STREQUAL "find_version")
  file(REMOVE_RECURSE "${WORK}")
  execute_process(COMMAND ${CMAKE_COMMAND} -S "${SOURCE_ROOT}/tests/packaging/find_version" -B "${WORK}"
                          "-DCMAKE_PREFIX_PATH=${PREFIX}" "-DDEZERO_REQUEST=${REQUEST}" ${cxx_arg}
                          -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  regex_escape(version_re "${VERSION}")
  regex_escape(prefix_re "${PREFIX}")
  regex_escape(request_re "${REQUEST}")
  if(EXPECT STREQUAL "found")
    if(NOT rc EQUAL 0 OR NOT out MATCHES "found dezero ${version_re} in ${prefix_re}/")
      fail("find_package(dezero ${REQUEST} REQUIRED) should find ${VERSION} in ${PREFIX} (${rc}):\n${out}\n${err}")
    endif()
    string(REGEX MATCH "find_version: [^\n]*" line "${out}")
    message(STATUS "check_packaging: ${line}")
  elseif(EXPECT STREQUAL "refused")
    # Refused for its version: CMake saw the installed config and did not accept it.
    string(REGEX REPLACE "[ \n]+" " " err1 "${err}")
    if(rc EQUAL 0 OR NOT err1 MATCHES "compatible with requested version \"${request_re}\""
       OR NOT err1 MATCHES "dezeroConfig.cmake, version: ${version_re}")
      fail("find_package(dezero ${REQUEST} REQUIRED) should refuse the installed ${VERSION} (${rc}):\n${out}\n${err}")
    endif()
    message(STATUS "check_packaging: find_package(dezero ${REQUEST} REQUIRED) refuses dezero ${VERSION}, as it should:\n${err}")
  else()
    fail("EXPECT must be found or refused, not '${EXPECT}'")
  endif()
  return()
endif()

# --- the Debian package ---------------------------------------------------------------------
if(MODE STREQUAL "deb")
  file(REMOVE_RECURSE "${WORK}")
  file(MAKE_DIRECTORY "${WORK}/out")
  # -B: the package and cpack's staging folder (_CPack_Packages) go under WORK, not into the build.
  execute_process(COMMAND dpkg --print-architecture OUTPUT_VARIABLE arch OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(cpack_config "")
  if(CONFIG)
    set(cpack_config -C "${CONFIG}")
  endif()
  # CPACK_SET: one more CPack variable (VAR=VALUE), for the test that shows a bad Depends is caught.
  if(CPACK_SET)
    list(APPEND cpack_config -D "${CPACK_SET}")
  endif()
  step("cpack -G DEB" ${CMAKE_COMMAND} -E chdir "${DEZERO_BUILD_DIR}"
       ${CPACK} -G DEB --config "${DEZERO_BUILD_DIR}/CPackConfig.cmake" -B "${WORK}/out" ${cpack_config})
  set(deb "${WORK}/out/libdezero-dev_${VERSION}_${arch}.deb")
  if(NOT EXISTS "${deb}")
    file(GLOB made "${WORK}/out/*.deb")
    fail("cpack made ${made}, not ${deb}\n${step_out}")
  endif()
  step("dpkg-deb -I" ${DPKG_DEB} -I "${deb}")
  message(STATUS "check_packaging: dpkg-deb -I ${deb}\n${step_out}")
  foreach(field Package Version Architecture Depends)
    step("dpkg-deb -f ${field}" ${DPKG_DEB} -f "${deb}" ${field})
    string(STRIP "${step_out}" ${field})
  endforeach()
  if(NOT Package STREQUAL "libdezero-dev" OR NOT Version STREQUAL VERSION OR NOT Architecture STREQUAL arch)
    fail("the package is ${Package} ${Version} ${Architecture}, not libdezero-dev ${VERSION} ${arch}")
  endif()
  # Computed by dpkg-shlibdeps: the C and C++ runtimes with the versions the library's symbols
  # need. No CUDA library (loaded at run time), nor libcurl, libjpeg, libarchive (dlopen()ed too).
  if(NOT Depends MATCHES "(^|, )libc6 \\(>= [0-9.]+\\)" OR NOT Depends MATCHES "(^|, )libstdc\\+\\+6 \\(>= [0-9.]+\\)")
    fail("Depends is not what dpkg-shlibdeps computes (libc6 (>= ...), libstdc++6 (>= ...)): '${Depends}'")
  endif()
  string(TOLOWER "${Depends}" depends_lc)
  if(depends_lc MATCHES "(^|, )([^,]*(cuda|cudnn|cublas|curand|nvrtc|nvidia|nvjitlink|libcurl|libjpeg|libarchive)[^,]*)")
    fail("Depends names '${CMAKE_MATCH_2}', which the library loads at run time: '${Depends}'")
  endif()

  step("dpkg-deb -c" ${DPKG_DEB} -c "${deb}")
  set(listing "${step_out}")
  foreach(f usr/include/dezero/dezero.hpp usr/include/dezero/version.hpp usr/${LIBDIR}/libdezero.so
            usr/${LIBDIR}/libdezero.so.${VERSION} usr/${LIBDIR}/pkgconfig/dezero.pc
            usr/${LIBDIR}/cmake/dezero/dezeroConfig.cmake usr/${LIBDIR}/cmake/dezero/dezeroConfigVersion.cmake
            usr/${LIBDIR}/cmake/dezero/dezeroTargets.cmake)
    regex_escape(f_re "${f}")
    if(NOT listing MATCHES " \\./${f_re}( |\n)")
      fail("the package has no /${f}:\n${listing}")
    endif()
  endforeach()

  set(root "${WORK}/root")
  step("dpkg-deb -x" ${DPKG_DEB} -x "${deb}" "${root}")
  # libdezero and the optional libraries beside it (libdezero_mn with MPI, libdezero_onnx with
  # libonnx): each one's NEEDed libraries come from packages that Depends names.
  file(GLOB packaged_libs "${root}/usr/${LIBDIR}/libdezero*.so.${VERSION}")
  list(FIND packaged_libs "${root}/usr/${LIBDIR}/libdezero.so.${VERSION}" at)
  if(at EQUAL -1)
    fail("the package has no libdezero.so.${VERSION}: ${packaged_libs}")
  endif()
  list(FIND packaged_libs "${root}/usr/${LIBDIR}/libdezero_onnx.so.${VERSION}" at)
  if(WITH_ONNX AND at EQUAL -1)
    fail("the build has dezero::onnx, but the package has no libdezero_onnx.so.${VERSION}: ${packaged_libs}")
  endif()
  foreach(lib ${packaged_libs})
    get_filename_component(lib_name "${lib}" NAME)
    step("readelf -d" ${READELF} -d "${lib}")
    set(dynamic "${step_out}")
    if(dynamic MATCHES "\\((RUNPATH|RPATH)\\)[^\n]*")
      fail("the packaged ${lib_name} carries a ${CMAKE_MATCH_0}")
    endif()
    string(REGEX MATCHALL "\\(NEEDED\\)[^\n]*\\[[^]\n]+\\]" needed_lines "${dynamic}")
    set(needed "")
    foreach(l ${needed_lines})
      string(REGEX REPLACE ".*\\[([^]]+)\\]" "\\1" so "${l}")
      list(APPEND needed "${so}")
    endforeach()
    message(STATUS "check_packaging: the packaged ${lib_name} NEEDs ${needed}")
    # Every NEEDed library comes from a Debian package that Depends names.
    foreach(so ${needed})
      if(so MATCHES "^libdezero")  # one of the package's own libraries
        continue()
      endif()
      if(so MATCHES "^lib(cuda|cudart|cublas|cublasLt|cudnn|curand|nvrtc|nvidia|nvJitLink)")
        fail("${lib_name} NEEDs ${so}: the CUDA libraries must be loaded at run time")
      endif()
      execute_process(COMMAND dpkg-query -S "*/${so}" RESULT_VARIABLE rc OUTPUT_VARIABLE owners ERROR_QUIET)
      # "zlib1g:amd64: /lib/x86_64-linux-gnu/libz.so.1"; libm.so.6 also has "libc6-i386: /lib32/libm.so.6":
      # one of the packages that install it (the host architecture's) must be in Depends.
      regex_escape(so_re "${so}")
      string(REGEX MATCHALL "[^\n]*: [^\n]*/${so_re}(\n|$)" owner_lines "${owners}")
      set(pkgs "")
      set(named "")
      foreach(line ${owner_lines})
        if(line MATCHES "^diversion ")
          continue()
        endif()
        string(REGEX REPLACE ": [^:]*$" "" line "${line}")
        string(REPLACE ", " ";" line "${line}")
        foreach(p ${line})
          string(REGEX REPLACE ":[a-z0-9]+$" "" p "${p}")
          list(APPEND pkgs "${p}")
          regex_escape(p_re "${p}")
          if(Depends MATCHES "(^|[ ,|])${p_re}( |,|$)")
            set(named "${p}")
          endif()
        endforeach()
      endforeach()
      if(NOT rc EQUAL 0 OR NOT pkgs)
        fail("${lib_name} NEEDs ${so}, which no Debian package installs here: Depends cannot name it")
      endif()
      if(NOT named)
        list(REMOVE_DUPLICATES pkgs)
        fail("${lib_name} NEEDs ${so} (from ${pkgs}), which Depends does not name: '${Depends}'")
      endif()
    endforeach()
  endforeach()
  message(STATUS "check_packaging: Depends: ${Depends}")

  # The unpacked dezero.pc points into the unpacked root.
  if(PKG_CONFIG)
    step("pkg-config (unpacked)" ${CMAKE_COMMAND} -E env "PKG_CONFIG_PATH=${root}/usr/${LIBDIR}/pkgconfig"
         ${PKG_CONFIG} --variable=includedir dezero)
    string(STRIP "${step_out}" includedir)
    if(NOT EXISTS "${includedir}/dezero/version.hpp")
      fail("the unpacked dezero.pc's includedir ${includedir} has no dezero/version.hpp")
    endif()
  endif()

  # tests/consumer against the unpacked root only: its headers are exactly the public ones,
  # each compiles alone, the consumer program passes.
  step("consumer against the unpacked package"
       ${CMAKE_COMMAND} "-DPREFIX=${root}/usr" "-DCONSUMER_SOURCE_DIR=${SOURCE_ROOT}/tests/consumer"
       "-DWORK=${WORK}/consumer" "-DCXX=${CXX}" "-DCONFIG=${CONFIG}" "-DSOURCE_ROOT=${SOURCE_ROOT}"
       "-DPUBLIC_HEADERS=${PUBLIC_HEADERS}" -P "${SOURCE_ROOT}/tests/consumer/check_consumer.cmake")
  message(STATUS "${step_out}${step_err}")
  message(STATUS "check_packaging: ${deb}: Depends computed, no CUDA library, the consumer builds against it")
  return()
endif()

fail("unknown MODE '${MODE}'")
