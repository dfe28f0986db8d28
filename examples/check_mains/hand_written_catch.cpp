// examples/check_mains/hand_written_catch.cpp - not built: the input of the CTest test
// examples_report_errors_catches_hand_written_catch. Its main catches, but prints the
// error itself (before stdout is flushed, and without the program's name), so
// examples/check_mains.cmake must refuse it.
#include <dezero/dezero.hpp>

#include <iostream>

int main() try {
  std::cout << dezero::array(1.0) << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << e.what() << "\n";
  return 1;
}
