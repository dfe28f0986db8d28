# cmake/docs.cmake - the API reference (included by the top-level CMakeLists.txt): the target
# `docs` runs Doxygen (docs/Doxyfile.in) over the installed public headers, the README (the main
# page) and the DeZero-to-C++ guide, into <build>/docs/html. With the tests, the CTest test
# docs_reference builds it and fails on any Doxygen warning (an undocumented public name, a
# \param that names no parameter) and on any internal (detail) name in the pages.
find_package(Doxygen QUIET OPTIONAL_COMPONENTS dot)
if(NOT DOXYGEN_FOUND)
  message(STATUS "dezero: Doxygen not found: no `docs` target (apt-get install doxygen)")
  return()
endif()
set(DEZERO_DOCS_DIR ${PROJECT_BINARY_DIR}/docs)
get_target_property(dezero_public_headers dezero HEADER_SET)
set(DEZERO_DOCS_INPUT ${dezero_public_headers} ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/docs/dezero-to-cpp.md
    ${PROJECT_SOURCE_DIR}/CHANGELOG.md ${PROJECT_SOURCE_DIR}/SECURITY.md)
list(JOIN DEZERO_DOCS_INPUT " \\\n                         " DEZERO_DOCS_INPUT)
if(DOXYGEN_DOT_FOUND)
  set(DEZERO_DOCS_HAVE_DOT YES)
else()
  set(DEZERO_DOCS_HAVE_DOT NO)
endif()
configure_file(${PROJECT_SOURCE_DIR}/docs/Doxyfile.in ${DEZERO_DOCS_DIR}/Doxyfile @ONLY)
add_custom_target(docs
  COMMAND ${CMAKE_COMMAND} -E remove_directory ${DEZERO_DOCS_DIR}/html ${DEZERO_DOCS_DIR}/xml
  COMMAND Doxygen::doxygen ${DEZERO_DOCS_DIR}/Doxyfile
  COMMAND ${CMAKE_COMMAND} -E echo "dezero: the API reference is ${DEZERO_DOCS_DIR}/html/index.html"
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
  COMMENT "Doxygen: the API reference"
  VERBATIM)

# `cmake --install` (and the .deb) carry the reference when it has been built (`--target docs`
# first; the test docs_reference builds it too): <prefix>/share/doc/dezero/html/index.html.
install(DIRECTORY ${DEZERO_DOCS_DIR}/html/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/html OPTIONAL)

# --- the test: no warning, no internal name (tools/check_docs.py) -----------------------------
find_program(DEZERO_DOCS_PYTHON3 python3)
if(DEZERO_BUILD_TESTS AND DEZERO_DOCS_PYTHON3)
  set(check_docs ${CMAKE_COMMAND} -DBUILD_DIR=${PROJECT_BINARY_DIR} -DDOCS_DIR=${DEZERO_DOCS_DIR}
      -DPYTHON=${DEZERO_DOCS_PYTHON3} -DCHECKER=${PROJECT_SOURCE_DIR}/tools/check_docs.py)
  add_test(NAME docs_reference COMMAND ${check_docs} -P ${PROJECT_SOURCE_DIR}/cmake/check_docs.cmake)
  set_tests_properties(docs_reference PROPERTIES PASS_REGULAR_EXPRESSION "check_docs: no warnings, no internal names"
    RESOURCE_LOCK dezero_build_tree LABELS docs TIMEOUT 600)
  # The check itself: one undocumented function and one wrong \param in an extra input fail it.
  add_test(NAME docs_reference_catches_undocumented
    COMMAND ${check_docs} -DDOXYGEN=$<TARGET_FILE:Doxygen::doxygen>
            -DEXTRA_INPUT=${PROJECT_SOURCE_DIR}/tests/data/doc_undocumented.hpp
            -DSCRATCH=${PROJECT_BINARY_DIR}/docs-catch -P ${PROJECT_SOURCE_DIR}/cmake/check_docs.cmake)
  set_tests_properties(docs_reference_catches_undocumented PROPERTIES
    PASS_REGULAR_EXPRESSION "doc_undocumented.hpp:[0-9]+: warning: [^\n]*'y'[^\n]*doc_check_wrong_param.*doc_undocumented.hpp:[0-9]+: warning: [^\n]*doc_check_undocumented_function[^\n]*not documented"
    LABELS docs TIMEOUT 600)
endif()
