# tests/mn/check_abort.cmake - the CTest tests mn_abort_caught / mn_abort_uncaught: runs
# tests/mn/abort.cpp under mpirun -np 2, where rank 1 throws while rank 0 waits in a barrier, and
# requires the job to end within 60 s with a non-zero status, rank 1's message and dezero::mn's
# abort notice (instead of hanging until CTest's timeout).
#   cmake -DMPIEXEC=... -DNP_FLAG=-n -DPROGRAM=... -DMODE=caught|uncaught -P check_abort.cmake
string(TIMESTAMP start "%s")
execute_process(COMMAND ${MPIEXEC} ${NP_FLAG} 2 ${PROGRAM} ${MODE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
string(TIMESTAMP end "%s")
math(EXPR seconds "${end} - ${start}")
set(all "${out}${err}")
message("${all}")
if(rc MATCHES "timeout|Process terminated due to timeout")
  message(FATAL_ERROR "check_abort: the job was still running after 60 s (a rank hung)")
endif()
if(rc EQUAL 0)
  message(FATAL_ERROR "check_abort: the job exited with 0; it should fail")
endif()
if(MODE STREQUAL "silent")
  # rank 1 stopped sending; rank 0's watchdog names the call it waited in
  if(NOT all MATCHES "dezero::mn: rank 0: waited [0-9]+ s in MPI_Barrier[^\n]*DEZERO_MN_TIMEOUT=[^\n]*aborting the MPI job")
    message(FATAL_ERROR "check_abort: rank 0's watchdog notice is missing")
  endif()
  if(seconds GREATER 40)
    message(FATAL_ERROR "check_abort: the watchdog took ${seconds} s")
  endif()
else()
  if(NOT all MATCHES "rank 1 fails on purpose")
    message(FATAL_ERROR "check_abort: rank 1's message is missing")
  endif()
  if(NOT all MATCHES "dezero::mn: rank 1: [^\n]*aborting the MPI job")
    message(FATAL_ERROR "check_abort: dezero::mn's abort notice for rank 1 is missing")
  endif()
endif()
if(all MATCHES "left the barrier")
  message(FATAL_ERROR "check_abort: rank 0 left the barrier")
endif()
message("check_abort: the job ended in ${seconds} s with status ${rc}")
