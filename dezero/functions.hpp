// dezero/functions.hpp - dezero::F, the differentiable functions (DeZero's
// dezero.functions, imported as F). Each takes Variables (a Tensor converts
// implicitly) and records itself in the graph; each backward is written with
// these same functions, so gradients of any order work (steps 33-36).
//
// One header per family under dezero/functions/, each paired with the source that
// implements it; this umbrella includes them all.
#pragma once

#include "dezero/core.hpp"
#include "dezero/functions/arithmetic.hpp"
#include "dezero/functions/math.hpp"
#include "dezero/functions/shape.hpp"
#include "dezero/functions/reduce.hpp"
#include "dezero/functions/linalg.hpp"
#include "dezero/functions_nn.hpp"
