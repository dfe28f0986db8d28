# check_output.cmake - runs one example and checks what it prints (CTest helper).
#
#   cmake -DEXE=<program> [-DARGS=a|b] [-DWORKDIR=<dir>] -DEXPECT=<s1>|<s2>|...
#         [-DLAST=<line>] [-DFILES=<f1>|<f2>] [-DABSENT=<f1>|<f2>] [-DNO_GPU=<s1>|<s2>] [-DREFUSE=<s1>|<s2>]
#         [-DEXIT_CODE=<n>] [-DSTDERR=<s1>|<s2>] [-DMERGE=ON] [-DMKDIR=<d1>|<d2>]
#         -P check_output.cmake
#
# Passes when the program exits with 0, its stdout contains every EXPECT string
# literally and in that order, its last line equals LAST (when given), every
# file in FILES exists in WORKDIR afterwards and no file in ABSENT does. Lists are '|'-separated because
# CTest splits arguments at ';'.
#
# NO_GPU (for a program run with --device cuda): when its stdout or stderr contains
# the first NO_GPU string, the machine has no CUDA device and the program was right
# to refuse: the test then passes when the exit code is not 0 and every NO_GPU
# string appears in order in stdout followed by stderr (EXPECT, LAST and FILES are
# not checked). With a GPU the NO_GPU strings are absent and the usual checks apply.
#
# REFUSE (for bad input on every machine: a missing file, a bad option): the program
# must exit with a code other than 0 and print every REFUSE string, in order, in
# stdout followed by stderr; nothing else is checked.
#
# EXIT_CODE (with REFUSE): the exit code the program must return, e.g. 1 for an error
# reported by examples/common/report.hpp (an abort gives "Subprocess aborted"). STDERR: strings
# that must appear in stderr, in order. MERGE: stdout and stderr go to one pipe, as in
# `program > log 2>&1`, so stdout is both, in the order they were written (stderr is then
# empty): REFUSE can check that an error message comes after the lines printed before it.
# MKDIR: directories made in WORKDIR before the run (one in the place of a file the
# program writes makes that write fail).
if(NOT EXE)
  message(FATAL_ERROR "check_output: EXE is not set")
endif()
string(REPLACE "|" ";" args "${ARGS}")
string(REPLACE "|" ";" expect "${EXPECT}")
string(REPLACE "|" ";" files "${FILES}")
string(REPLACE "|" ";" absent "${ABSENT}")
if(NOT WORKDIR)
  set(WORKDIR ".")
endif()
file(MAKE_DIRECTORY "${WORKDIR}")
foreach(f IN LISTS files absent)
  file(REMOVE "${WORKDIR}/${f}")
endforeach()

string(REPLACE "|" ";" mkdirs "${MKDIR}")
foreach(d IN LISTS mkdirs)
  file(MAKE_DIRECTORY "${WORKDIR}/${d}")
endforeach()

if(MERGE)
  execute_process(COMMAND "${EXE}" ${args} WORKING_DIRECTORY "${WORKDIR}"
    OUTPUT_VARIABLE out ERROR_VARIABLE out RESULT_VARIABLE rc)
  set(err "")
else()
  execute_process(COMMAND "${EXE}" ${args} WORKING_DIRECTORY "${WORKDIR}"
    OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
endif()

# Fails unless every string of `strings` appears in `text`, in order; `what` names the output.
function(expect_in_order text strings what)
  foreach(s IN LISTS strings)
    string(FIND "${text}" "${s}" pos)
    if(pos EQUAL -1)
      message(FATAL_ERROR "check_output: expected '${s}' (in order) in ${what} of ${EXE}\n"
                          "stdout:\n${out}\nstderr:\n${err}")
    endif()
    string(LENGTH "${s}" len)
    math(EXPR pos "${pos} + ${len}")
    string(SUBSTRING "${text}" ${pos} -1 text)
  endforeach()
endfunction()

if(DEFINED EXIT_CODE AND NOT EXIT_CODE STREQUAL "" AND NOT rc STREQUAL EXIT_CODE)
  message(FATAL_ERROR "check_output: ${EXE} exited with '${rc}', expected ${EXIT_CODE}\n"
                      "stdout:\n${out}\nstderr:\n${err}")
endif()
if(STDERR)
  string(REPLACE "|" ";" stderr_strings "${STDERR}")
  expect_in_order("${err}" "${stderr_strings}" "stderr")
endif()

if(REFUSE)
  string(REPLACE "|" ";" refuse "${REFUSE}")
  if(rc EQUAL 0)
    message(FATAL_ERROR "check_output: ${EXE} should have refused (a non-zero exit) but exited with 0\n"
                        "stdout:\n${out}\nstderr:\n${err}")
  endif()
  expect_in_order("${out}${err}" "${refuse}" "the refusal")
  message(STATUS "check_output: ${EXE} ok (refused with exit code ${rc}: checked its message)")
  return()
endif()

if(NO_GPU)
  string(REPLACE "|" ";" no_gpu "${NO_GPU}")
  list(GET no_gpu 0 no_gpu_first)
  string(FIND "${out}${err}" "${no_gpu_first}" pos)
  if(NOT pos EQUAL -1)
    if(rc EQUAL 0)
      message(FATAL_ERROR
        "check_output: ${EXE} said '${no_gpu_first}' but exited with 0\nstdout:\n${out}\nstderr:\n${err}")
    endif()
    expect_in_order("${out}${err}" "${no_gpu}" "the no-GPU output")
    message(STATUS "check_output: ${EXE} ok (no CUDA device: checked its message)")
    return()
  endif()
endif()

if(NOT rc EQUAL 0)
  message(FATAL_ERROR "check_output: ${EXE} exited with ${rc}\nstdout:\n${out}\nstderr:\n${err}")
endif()

expect_in_order("${out}" "${expect}" "the output")

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
# A .png must be a whole PNG file: the signature first, the IEND chunk last (gnuplot
# leaves an empty or cut-off file behind when a plot command fails).
foreach(f IN LISTS files)
  if(f MATCHES "\\.png$")
    file(SIZE "${WORKDIR}/${f}" size)
    if(size LESS 100)
      message(FATAL_ERROR "check_output: ${WORKDIR}/${f} has only ${size} bytes")
    endif()
    file(READ "${WORKDIR}/${f}" head LIMIT 8 HEX)
    math(EXPR tail_at "${size} - 12")
    file(READ "${WORKDIR}/${f}" tail OFFSET ${tail_at} HEX)
    if(NOT head STREQUAL "89504e470d0a1a0a" OR NOT tail MATCHES "^0000000049454e44ae426082$")
      message(FATAL_ERROR "check_output: ${WORKDIR}/${f} is not a complete PNG file")
    endif()
  endif()
endforeach()

foreach(f IN LISTS absent)
  if(EXISTS "${WORKDIR}/${f}")
    message(FATAL_ERROR "check_output: ${EXE} wrote ${WORKDIR}/${f}, which it should not have")
  endif()
endforeach()
message(STATUS "check_output: ${EXE} ok")
