// examples/common/options.hpp - the integer options of the example programs (--epochs N,
// --batch-size N, --size S, ...): the whole text must be an integer of at least `lo`,
// else a dezero::ValueError that names the option and what it got ("--epochs needs an
// integer >= 1, got 'ten'"), where std::stoi would say only "stoi".
#pragma once

#include <dezero/error.hpp>

#include <exception>
#include <string>

namespace example {

inline long long integer_option(const std::string& flag, const std::string& text, long long lo) {
  std::size_t used = 0;
  long long n = 0;
  try {
    n = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || n < lo)
    throw dezero::ValueError(flag + " needs an integer >= " + std::to_string(lo) + ", got '" + text + "'");
  return n;
}

}  // namespace example
