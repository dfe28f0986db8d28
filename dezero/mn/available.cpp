// dezero/mn/available.cpp - mn::is_available(), in libdezero itself (not libdezero_mn), so that a
// program can ask whether this build has dezero::mn without linking MPI.
#include "dezero/mn.hpp"

namespace dezero::mn {

bool is_available() {
#ifdef DEZERO_WITH_MPI
  return true;
#else
  return false;
#endif
}

}  // namespace dezero::mn
