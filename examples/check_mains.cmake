# check_mains.cmake - fails unless every example program reports an error the same way
# (CTest helper; the tests examples_report_errors*).
#
#   cmake -DDIR=<examples dir> -P check_mains.cmake        every DIR/*.cpp
#   cmake -DFILES=<f1>|<f2> -P check_mains.cmake           the files given
#
# Each examples/*.cpp is one program, and its main must be a function-try-block that
# ends with the handler of examples/common/report.hpp, naming the program by its file:
#
#   #include "common/report.hpp"
#   int main(...) try {
#     ...
#   } catch (const std::exception& e) {
#     return example::report_error("<file stem>", e);
#   }
#
# A main without it lets a dezero::Error reach std::terminate: the program aborts (exit
# code 134) and loses the lines still in stdout's buffer when stdout is a pipe.
# Every file that breaks the rule is named, with what is wrong; examples/check_mains/
# holds two files that break it, for the tests that show this script catches them.
if(DEFINED FILES)
  string(REPLACE "|" ";" files "${FILES}")
elseif(DEFINED DIR)
  file(GLOB files "${DIR}/*.cpp")
else()
  message(FATAL_ERROR "check_mains: set DIR or FILES")
endif()
list(LENGTH files n_files)
if(n_files EQUAL 0)
  message(FATAL_ERROR "check_mains: no .cpp file to check (DIR='${DIR}', FILES='${FILES}')")
endif()

set(problems "")
foreach(f IN LISTS files)
  get_filename_component(name "${f}" NAME)
  get_filename_component(stem "${f}" NAME_WE)
  file(READ "${f}" text)

  string(FIND "${text}" "#include \"common/report.hpp\"" at)
  if(at EQUAL -1)
    string(APPEND problems "${name}: does not #include \"common/report.hpp\"\n")
  endif()

  string(REGEX MATCH "(^|\n)int main\\([^)\n]*\\)[^\n]*" main_line "${text}")
  if(NOT main_line)
    string(APPEND problems "${name}: no main (each examples/*.cpp is a program)\n")
    continue()
  endif()
  string(STRIP "${main_line}" main_line)
  if(NOT main_line MATCHES "\\) try {$")
    string(FIND "${text}" "${main_line}" at)
    string(SUBSTRING "${text}" 0 ${at} before)
    string(REGEX MATCHALL "\n" newlines "${before}")
    list(LENGTH newlines line)
    math(EXPR line "${line} + 1")
    string(APPEND problems "${name}:${line}: '${main_line}' is not a function-try-block "
                           "(int main(...) try { ... } catch (const std::exception& e) { ... })\n")
  endif()

  set(handler "} catch (const std::exception& e) {\n  return example::report_error(\"${stem}\", e);\n}")
  string(STRIP "${text}" body)
  string(LENGTH "${body}" body_len)
  string(LENGTH "${handler}" handler_len)
  set(tail "")
  if(body_len GREATER_EQUAL handler_len)
    math(EXPR from "${body_len} - ${handler_len}")
    string(SUBSTRING "${body}" ${from} -1 tail)
  endif()
  if(NOT tail STREQUAL handler)
    string(APPEND problems "${name}: main does not end with the handler of common/report.hpp:\n"
                           "    } catch (const std::exception& e) {\n"
                           "      return example::report_error(\"${stem}\", e);\n"
                           "    }\n")
  endif()
endforeach()

# The list goes out unformatted (NOTICE): FATAL_ERROR would re-wrap its lines.
if(problems)
  message(NOTICE "${problems}")
  message(FATAL_ERROR "check_mains: the main of the programs above does not report errors through "
                      "example::report_error (examples/common/report.hpp)")
endif()
message(STATUS "check_mains: all ${n_files} programs end main with example::report_error")
