// examples/common/report.hpp - how every example program ends on an error. Each main is a
// function-try-block:
//
//   int main(int argc, char** argv) try {
//     ...
//   } catch (const std::exception& e) {
//     return example::report_error("step33", e);
//   }
//
// so a dezero::Error (or any std::exception) becomes one line "step33: <message>" on
// stderr and exit code 1, instead of std::terminate (abort, exit code 134) losing the
// lines still in stdout's buffer when stdout is a pipe or a file. stdout is flushed
// first, so in a log that holds both streams the message comes after what was printed.
// examples/check_mains.cmake (the CTest test examples_report_errors) checks that every
// examples/*.cpp main ends this way.
#pragma once

#include <cstdio>
#include <exception>
#include <iostream>

namespace example {

inline int report_error(const char* program, const std::exception& e) {
  std::cout.flush();
  std::fflush(stdout);
  std::cerr << program << ": " << e.what() << std::endl;
  return 1;
}

}  // namespace example
