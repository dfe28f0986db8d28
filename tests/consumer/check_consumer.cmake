# check_consumer.cmake - CTest driver for tests/consumer: installs the dezero
# build tree into a scratch prefix, configures and builds the consumer project
# against it with find_package(dezero), and runs it.
#
#   cmake -DDEZERO_BUILD_DIR=<build> -DCONSUMER_SOURCE_DIR=<tests/consumer> -DWORK=<scratch>
#         [-DCXX=<compiler>] [-DCONFIG=<cfg>] -P check_consumer.cmake
foreach(v DEZERO_BUILD_DIR CONSUMER_SOURCE_DIR WORK)
  if(NOT ${v})
    message(FATAL_ERROR "check_consumer: ${v} is not set")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK}")
set(config_args "")
if(CONFIG)
  set(config_args --config "${CONFIG}")
endif()

function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "check_consumer: ${what} failed (${rc})\n${out}\n${err}")
  endif()
  set(step_out "${out}" PARENT_SCOPE)
endfunction()

step("install" ${CMAKE_COMMAND} --install "${DEZERO_BUILD_DIR}" --prefix "${WORK}/prefix" ${config_args})
set(cxx_arg "")
if(CXX)
  set(cxx_arg "-DCMAKE_CXX_COMPILER=${CXX}")
endif()
step("configure" ${CMAKE_COMMAND} -S "${CONSUMER_SOURCE_DIR}" -B "${WORK}/build" "-DCMAKE_PREFIX_PATH=${WORK}/prefix"
     -DCMAKE_BUILD_TYPE=Release ${cxx_arg})
step("build" ${CMAKE_COMMAND} --build "${WORK}/build" ${config_args})
find_program(consumer_exe consumer PATHS "${WORK}/build" "${WORK}/build/${CONFIG}" NO_DEFAULT_PATH REQUIRED)
step("run" "${consumer_exe}")
if(NOT step_out MATCHES "consumer: all checks passed")
  message(FATAL_ERROR "check_consumer: unexpected output:\n${step_out}")
endif()
message(STATUS "${step_out}")
