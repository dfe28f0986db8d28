/// \file
/// Which dezero this is: the headers' version (macros, for the
/// preprocessor) and the library's (dezero::version(), from the linked libdezero).
///
/// ```cpp
/// #include <dezero/version.hpp>
/// static_assert(DEZERO_VERSION >= 100, "needs dezero 0.1.0 or later");
/// std::cout << "dezero " << dezero::version() << "\n";  // "0.1.0"
/// ```
///
/// The three numbers below are the project's version: the top-level CMakeLists.txt reads
/// them for project(dezero VERSION ...), so the CMake package (dezeroConfigVersion.cmake),
/// the pkg-config file (dezero.pc), the shared library's file name and the Debian package
/// all carry the same one. Change it here, and add its entry to CHANGELOG.md.
#pragma once

/// The headers' major version number.
#define DEZERO_VERSION_MAJOR 0
/// The headers' minor version number.
#define DEZERO_VERSION_MINOR 1
/// The headers' patch version number.
#define DEZERO_VERSION_PATCH 0

/// The headers' version as one number for `#if` and static_assert: MAJOR * 10000 + MINOR * 100 + PATCH.
///
/// 0.1.0 is 100, 1.2.3 would be 10203.
#define DEZERO_VERSION (DEZERO_VERSION_MAJOR * 10000 + DEZERO_VERSION_MINOR * 100 + DEZERO_VERSION_PATCH)

/// \cond INTERNAL
#define DEZERO_VERSION_STRINGIFY_(x) #x
#define DEZERO_VERSION_STRINGIFY(x) DEZERO_VERSION_STRINGIFY_(x)
/// \endcond
/// The headers' version as a string literal, "MAJOR.MINOR.PATCH", e.g. "0.1.0".
#define DEZERO_VERSION_STRING                                                                        \
  DEZERO_VERSION_STRINGIFY(DEZERO_VERSION_MAJOR) "." DEZERO_VERSION_STRINGIFY(DEZERO_VERSION_MINOR) "." \
  DEZERO_VERSION_STRINGIFY(DEZERO_VERSION_PATCH)

namespace dezero {

/// The version of the libdezero the program runs with, "MAJOR.MINOR.PATCH". It is the
/// DEZERO_VERSION_STRING the library was compiled with, which differs from the one the
/// program saw only when the program runs with another libdezero than the one it was built against.
const char* version() noexcept;

}  // namespace dezero
