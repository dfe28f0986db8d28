// examples/check_mains/plain_main.cpp - not built: the input of the CTest test
// examples_report_errors_catches_plain_main. Its main has no handler, so an error
// would reach std::terminate; examples/check_mains.cmake must refuse it.
#include <dezero/dezero.hpp>

#include <iostream>

int main() {
  std::cout << dezero::array(1.0) << "\n";
}
