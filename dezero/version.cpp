// dezero/version.cpp - dezero::version(): the version this libdezero was built as.
#include "dezero/version.hpp"

namespace dezero {

const char* version() noexcept { return DEZERO_VERSION_STRING; }

}  // namespace dezero
