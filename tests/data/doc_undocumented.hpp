// tests/data/doc_undocumented.hpp - added to the reference's input by the CTest test
// docs_reference_catches_undocumented: a public name without a doc comment, and a \param
// that names no parameter, must both make check_docs.py fail.
#pragma once

namespace dezero {

/// A documented function with a wrong parameter name.
/// \param y the input
int doc_check_wrong_param(int x);

int doc_check_undocumented_function(int x);

}  // namespace dezero
