# cmake/check_docs.cmake - the CTest tests docs_reference and docs_reference_catches_undocumented
# (cmake/docs.cmake). Without EXTRA_INPUT: builds the `docs` target of BUILD_DIR and runs
# tools/check_docs.py on DOCS_DIR. With EXTRA_INPUT: runs DOXYGEN on the same configuration plus
# that file into SCRATCH (the reference of the build is left alone) and checks that instead.
if(EXTRA_INPUT)
  file(REMOVE_RECURSE "${SCRATCH}")
  file(MAKE_DIRECTORY "${SCRATCH}")
  file(WRITE "${SCRATCH}/Doxyfile" "@INCLUDE = ${DOCS_DIR}/Doxyfile\nINPUT += ${EXTRA_INPUT}\n"
       "OUTPUT_DIRECTORY = ${SCRATCH}\nWARN_LOGFILE = ${SCRATCH}/warnings.log\nGENERATE_HTML = NO\n")
  execute_process(COMMAND "${DOXYGEN}" "${SCRATCH}/Doxyfile" RESULT_VARIABLE rc OUTPUT_QUIET)
  set(checked "${SCRATCH}")
else()
  execute_process(COMMAND ${CMAKE_COMMAND} --build "${BUILD_DIR}" --target docs RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "check_docs: building the docs target failed (${rc})\n${out}\n${err}")
  endif()
  set(checked "${DOCS_DIR}")
endif()
execute_process(COMMAND "${PYTHON}" "${CHECKER}" "${checked}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "check_docs: the reference in ${checked} has problems (above)")
endif()
