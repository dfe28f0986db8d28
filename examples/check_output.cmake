# check_output.cmake - runs one example and checks what it prints (CTest helper).
#
#   cmake -DEXE=<program> [-DARGS=a|b] [-DWORKDIR=<dir>] -DEXPECT=<s1>|<s2>|...
#         [-DLAST=<line>] [-DFILES=<f1>|<f2>] [-DNO_GPU=<s1>|<s2>] -P check_output.cmake
#
# Passes when the program exits with 0, its stdout contains every EXPECT string
# literally and in that order, its last line equals LAST (when given) and every
# file in FILES exists in WORKDIR afterwards. Lists are '|'-separated because
# CTest splits arguments at ';'.
#
# NO_GPU (for a program run with --device cuda): when its stdout or stderr contains
# the first NO_GPU string, the machine has no CUDA device and the program was right
# to refuse: the test then passes when the exit code is not 0 and every NO_GPU
# string appears in order in stdout followed by stderr (EXPECT, LAST and FILES are
# not checked). With a GPU the NO_GPU strings are absent and the usual checks apply.
if(NOT EXE)
  message(FATAL_ERROR "check_output: EXE is not set")
endif()
string(REPLACE "|" ";" args "${ARGS}")
string(REPLACE "|" ";" expect "${EXPECT}")
string(REPLACE "|" ";" files "${FILES}")
if(NOT WORKDIR)
  set(WORKDIR ".")
endif()
file(MAKE_DIRECTORY "${WORKDIR}")
foreach(f IN LISTS files)
  file(REMOVE "${WORKDIR}/${f}")
endforeach()

execute_process(COMMAND "${EXE}" ${args} WORKING_DIRECTORY "${WORKDIR}"
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)

if(NO_GPU)
  string(REPLACE "|" ";" no_gpu "${NO_GPU}")
  list(GET no_gpu 0 no_gpu_first)
  set(both "${out}${err}")
  string(FIND "${both}" "${no_gpu_first}" pos)
  if(NOT pos EQUAL -1)
    if(rc EQUAL 0)
      message(FATAL_ERROR
        "check_output: ${EXE} said '${no_gpu_first}' but exited with 0\nstdout:\n${out}\nstderr:\n${err}")
    endif()
    foreach(s IN LISTS no_gpu)
      string(FIND "${both}" "${s}" pos)
      if(pos EQUAL -1)
        message(FATAL_ERROR "check_output: expected '${s}' (in order) in the no-GPU output of ${EXE}\n"
                            "stdout:\n${out}\nstderr:\n${err}")
      endif()
      string(LENGTH "${s}" len)
      math(EXPR pos "${pos} + ${len}")
      string(SUBSTRING "${both}" ${pos} -1 both)
    endforeach()
    message(STATUS "check_output: ${EXE} ok (no CUDA device: checked its message)")
    return()
  endif()
endif()

if(NOT rc EQUAL 0)
  message(FATAL_ERROR "check_output: ${EXE} exited with ${rc}\nstdout:\n${out}\nstderr:\n${err}")
endif()

set(rest "${out}")
foreach(s IN LISTS expect)
  string(FIND "${rest}" "${s}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "check_output: expected '${s}' (in order) in the output of ${EXE}\nstdout:\n${out}")
  endif()
  string(LENGTH "${s}" len)
  math(EXPR pos "${pos} + ${len}")
  string(SUBSTRING "${rest}" ${pos} -1 rest)
endforeach()

if(DEFINED LAST)
  string(STRIP "${out}" stripped)
  string(FIND "${stripped}" "\n" nl REVERSE)
  math(EXPR nl "${nl} + 1")
  string(SUBSTRING "${stripped}" ${nl} -1 last_line)
  if(NOT last_line STREQUAL LAST)
    message(FATAL_ERROR "check_output: last line of ${EXE} is '${last_line}', expected '${LAST}'")
  endif()
endif()

foreach(f IN LISTS files)
  if(NOT EXISTS "${WORKDIR}/${f}")
    message(FATAL_ERROR "check_output: ${EXE} did not write ${WORKDIR}/${f}")
  endif()
endforeach()
message(STATUS "check_output: ${EXE} ok")
