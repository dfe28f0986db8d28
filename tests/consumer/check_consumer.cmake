# check_consumer.cmake - CTest driver for tests/consumer: installs the dezero
# build tree into a scratch prefix, configures and builds the consumer project
# against it with find_package(dezero), and runs it.
#
# With PREFIX instead of DEZERO_BUILD_DIR it installs nothing and builds against that
# installed tree (tests/packaging: the unpacked .deb's usr/).
#
# With PUBLIC_HEADERS ('|'-separated paths under SOURCE_ROOT, the library's header
# file set) it first checks that the install holds exactly those headers: nothing
# internal (backend/, cpu/, tensor/*.hpp, ...) is shipped, nothing public is missing.
# The consumer project then compiles every installed header on its own.
#
#   cmake -DDEZERO_BUILD_DIR=<build> | -DPREFIX=<installed tree>
#         -DCONSUMER_SOURCE_DIR=<tests/consumer> -DWORK=<scratch>
#         [-DCXX=<compiler>] [-DCONFIG=<cfg>] [-DSOURCE_ROOT=<repo> -DPUBLIC_HEADERS=<a|b|...>]
#         -P check_consumer.cmake
foreach(v CONSUMER_SOURCE_DIR WORK)
  if(NOT ${v})
    message(FATAL_ERROR "check_consumer: ${v} is not set")
  endif()
endforeach()
if(NOT DEZERO_BUILD_DIR AND NOT PREFIX)
  message(FATAL_ERROR "check_consumer: set DEZERO_BUILD_DIR (a build to install) or PREFIX (an installed tree)")
endif()
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

if(PREFIX)
  set(prefix "${PREFIX}")
else()
  set(prefix "${WORK}/prefix")
  step("install" ${CMAKE_COMMAND} --install "${DEZERO_BUILD_DIR}" --prefix "${prefix}" ${config_args})
endif()
if(PUBLIC_HEADERS)
  string(REPLACE "|" ";" expected "${PUBLIC_HEADERS}")
  list(TRANSFORM expected REPLACE "^${SOURCE_ROOT}/" "")
  list(SORT expected)
  file(GLOB_RECURSE installed RELATIVE "${prefix}/include" "${prefix}/include/*")
  list(SORT installed)
  set(extra ${installed})
  list(REMOVE_ITEM extra ${expected})
  set(missing ${expected})
  list(REMOVE_ITEM missing ${installed})
  if(extra OR missing)
    message(FATAL_ERROR "check_consumer: the install's headers differ from the public list\n"
                        "  installed but not public: ${extra}\n  public but not installed: ${missing}")
  endif()
  list(LENGTH installed n)
  message(STATUS "check_consumer: ${n} public headers installed, nothing else")
endif()
set(cxx_arg "")
if(CXX)
  set(cxx_arg "-DCMAKE_CXX_COMPILER=${CXX}")
endif()
step("configure" ${CMAKE_COMMAND} -S "${CONSUMER_SOURCE_DIR}" -B "${WORK}/build" "-DCMAKE_PREFIX_PATH=${prefix}"
     -DCMAKE_BUILD_TYPE=Release ${cxx_arg})
# The dezero found is the one in the prefix, not another one on the machine.
file(STRINGS "${WORK}/build/CMakeCache.txt" dezero_dir REGEX "^dezero_DIR:")
string(REGEX REPLACE "^dezero_DIR:[A-Z]*=" "" dezero_dir "${dezero_dir}")
file(REAL_PATH "${dezero_dir}" dezero_dir)
file(REAL_PATH "${prefix}" prefix_real)
string(FIND "${dezero_dir}/" "${prefix_real}/" at)
if(NOT at EQUAL 0)
  message(FATAL_ERROR "check_consumer: find_package(dezero) found ${dezero_dir}, not the one in ${prefix}")
endif()
step("build" ${CMAKE_COMMAND} --build "${WORK}/build" ${config_args})
# Runs the consumer program `name` (from the build above) and requires "<name>: all checks passed";
# OPTIONAL: a program the package may not have (consumer_mn, without dezero::mn) is skipped.
function(run_consumer name)
  cmake_parse_arguments(R "OPTIONAL" "" "" ${ARGN})
  find_program(exe_${name} ${name} PATHS "${WORK}/build" "${WORK}/build/${CONFIG}" NO_DEFAULT_PATH)
  if(NOT exe_${name})
    if(R_OPTIONAL)
      return()
    endif()
    message(FATAL_ERROR "check_consumer: the build made no ${name}")
  endif()
  step("run ${name}" "${exe_${name}}")
  if(NOT step_out MATCHES "${name}: all checks passed")
    message(FATAL_ERROR "check_consumer: unexpected output of ${name}:\n${step_out}")
  endif()
  message(STATUS "${step_out}")
endfunction()
run_consumer(consumer)
run_consumer(consumer_cxx20)  # DeZero's keywords as C++20 designated initializers (cxx20.cpp)
run_consumer(consumer_mn OPTIONAL)  # dezero::mn when the package has it: one MPI process, no mpirun
run_consumer(consumer_onnx OPTIONAL)  # dezero::onnx when the package has it: an export / import round trip
