// dezero/functions/variable_methods.cpp - the Variable methods that call dezero::F
// (steps 38-41: x.reshape, x.T, x.sum, ...). They live with the functions, not in core,
// so that core never depends on the layer above it.
#include "dezero/core.hpp"
#include "dezero/functions.hpp"

namespace dezero {

Variable Variable::reshape(const Shape& shape) const { return F::reshape(*this, shape); }
Variable Variable::transpose() const { return F::transpose(*this); }
Variable Variable::transpose(const std::vector<int>& axes) const { return F::transpose(*this, axes); }
Variable Variable::T() const { return F::transpose(*this); }
Variable Variable::sum(const Axes& axes, bool keepdims) const { return F::sum(*this, axes, keepdims); }
Variable Variable::max(const Axes& axes, bool keepdims) const { return F::max(*this, axes, keepdims); }
Variable Variable::min(const Axes& axes, bool keepdims) const { return F::min(*this, axes, keepdims); }
Variable Variable::pow(double c) const { return F::pow(*this, c); }
Variable Variable::matmul(const Variable& W) const { return F::matmul(*this, W); }
Variable Variable::dot(const Variable& W) const { return F::matmul(*this, W); }
Variable Variable::operator[](const Index& index) const { return F::get_item(*this, Indices{index}); }
Variable Variable::operator[](const Indices& indices) const { return F::get_item(*this, indices); }


}  // namespace dezero
