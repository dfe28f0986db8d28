/// \file
/// The differentiable functions, dezero::F (DeZero's
/// dezero.functions, imported as F). Each takes Variables (a Tensor converts
/// implicitly) and records itself in the graph; each backward is written with
/// these same functions, so gradients of any order work (steps 33-36).
///
/// One header per family under dezero/functions/, each paired with the source that
/// implements it; this umbrella includes them all.
#pragma once

/// \namespace dezero::F
/// dezero::F: the differentiable functions (DeZero's dezero.functions).
///
/// Every function takes Variables (a Tensor converts implicitly), computes its result
/// with the Tensor operations of its operands' device and, while backprop is enabled
/// (Config::enable_backprop, see no_grad()), records itself in the graph. Each backward
/// is written with these same functions, so gradients of any order work (steps 33-36).
/// Shapes and dtypes follow NumPy (broadcasting, type promotion; a `double` operand takes
/// the Variable's dtype); operands on different devices are a dezero::DeviceError, and a
/// bad shape, dtype or argument is a dezero::Error subclass whose message names the
/// function. `#include <dezero/functions.hpp>` for all of them, or the header of one
/// family under `dezero/functions/`.

#include "dezero/core.hpp"
#include "dezero/functions/arithmetic.hpp"
#include "dezero/functions/math.hpp"
#include "dezero/functions/shape.hpp"
#include "dezero/functions/reduce.hpp"
#include "dezero/functions/linalg.hpp"
#include "dezero/functions_nn.hpp"
