// dezero/onnx/import_ops_index.cpp - internal: the importer's indexing ops, Gather, GatherElements
// and ScatterND (register_index_ops, ops.hpp). Float data goes through F::get_item (whose gradient
// scatters back) or through Functions for ScatterND, so the gradient flows to the data and the
// updates; integer data (shapes, indices) is computed on Tensors. ScatterND's max / min are opset
// 18's.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dezero/functions.hpp"
#include "dezero/onnx/import_util.hpp"
#include "dezero/onnx/ops.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero::onnx::detail {

namespace {

// GatherElements: out[i][j][k] = data[idx[i][j][k]][j][k] (for axis 0), as one advanced index
// whose other axes are broadcast aranges; F::get_item's gradient scatters back.
Variable gather_elements(const OpContext& ctx, const Variable& x, const Tensor& idx_any, std::int64_t axis_attr) {
  const int r = x.ndim();
  if (r == 0) ctx.malformed("cannot gather from a 0-d tensor");
  const int axis = axis_in(ctx, axis_attr, r);
  if (!is_integer(idx_any.dtype())) ctx.malformed(std::string("indices must be integers, got ") + dtype_name(idx_any.dtype()));
  if (idx_any.ndim() != r)
    dezero::detail::fail<ShapeError>("onnx import", describe_node(ctx.node(), ctx.opset()), ": indices of shape ",
                                     idx_any.shape(), " for data of shape ", x.shape(), " (the ranks must agree)");
  const Tensor idx = on(idx_any, x.device());
  Indices ix;
  for (int d = 0; d < r; ++d) {
    if (d == axis) {
      ix.emplace_back(idx);
      continue;
    }
    Shape s(static_cast<std::size_t>(r), 1);
    s[static_cast<std::size_t>(d)] = idx.shape()[static_cast<std::size_t>(d)];
    ix.emplace_back(arange(0.0, static_cast<double>(s[static_cast<std::size_t>(d)]), 1.0, int64, x.device()).reshape(s));
  }
  if (is_int(x)) return fixed(dezero::get_item(x.data(), ix));
  return F::get_item(x, ix);
}

// --- ScatterND -----------------------------------------------------------------------------------
// data with `updates` written at the index tuples: indices (..., k) of integers, 1 <= k <= rank;
// updates indices.shape[:-1] + data.shape[k:]. Viewed as rows: data (D, S), D = the extents of the
// first k axes multiplied, S the rest; each tuple names one row, its update (S,) replaces it
// (reduction "none"), is added ("add") or multiplied in ("mul", from opset 16). Constant inputs
// (Swin's attention masks) are computed on the host. Otherwise in Functions, with P the (D, U)
// one-hot rows of the U tuples and keep 1 on the rows no tuple names (0 on the others; 1 everywhere
// for "add"):  y = data * keep + P @ updates  ("none", "add"), so both inputs get gradients. "mul"
// multiplies in one round per repeat of a row: y = y * (P_r @ updates + keep_r), round r taking
// each row's r-th tuple; "max" and "min" (opset 18) take, round by round, the larger / smaller of
// y and P_r @ updates on the rows the round names (the gradient goes to the one chosen, a tie to
// y). A tuple named twice: ONNX leaves "none" undefined; here the updates add.
template <class T>
T scatter_one(const std::string& red, T t, T x) {  // the element t after the update x
  if (red == "add") return t + x;
  if (red == "mul") return t * x;
  if (red == "max") return std::max(t, x);
  if (red == "min") return std::min(t, x);
  return x;
}

VariableList run_scatter_nd(OpContext& ctx) {
  const Variable& data = ctx.input(0);
  const Variable& upd = ctx.input(2);
  const Tensor& idx = ctx.input(1).data();
  const std::string red = ctx.attrs().s("reduction", "none");
  if (!is_integer(idx.dtype())) ctx.malformed(std::string("indices must be integers, got ") + dtype_name(idx.dtype()));
  if (is_int(data) != is_int(upd))
    ctx.malformed(std::string("data (") + dtype_name(data.dtype()) + ") and updates (" + dtype_name(upd.dtype()) +
                  ") must have one type");
  const int r = data.ndim(), q = idx.ndim();
  if (q < 1 || idx.shape()[q - 1] < 1 || idx.shape()[q - 1] > r)
    shape_error(ctx, "indices " + idx.shape().str() + " must end in an axis of 1 to " + std::to_string(r) +
                         " (data " + data.shape().str() + ")");
  const int k = static_cast<int>(idx.shape()[q - 1]);
  Shape want(idx.shape().begin(), idx.shape().end() - 1);
  std::int64_t D = 1, S = 1, U = 1;
  for (int j = 0; j < q - 1; ++j) U *= idx.shape()[j];
  for (int j = 0; j < r; ++j) (j < k ? D : S) *= data.shape()[j];
  for (int j = k; j < r; ++j) want.push_back(data.shape()[j]);
  if (upd.shape() != want)
    shape_error(ctx, "updates " + upd.shape().str() + " must be " + want.str() + " for indices " + idx.shape().str() +
                         " and data " + data.shape().str());
  const std::vector<std::int64_t> iv = idx.to_cpu().astype(int64).to_vector<std::int64_t>();
  std::vector<std::int64_t> rows(static_cast<std::size_t>(U));
  for (std::int64_t u = 0; u < U; ++u) {
    std::int64_t row = 0;
    for (int j = 0; j < k; ++j) {
      std::int64_t v = iv[static_cast<std::size_t>(u * k + j)];
      const std::int64_t d = data.shape()[j];
      if (v < 0) v += d;
      if (v < 0 || v >= d)
        throw IndexError(describe_node(ctx.node(), ctx.opset()) + ": index " +
                         std::to_string(iv[static_cast<std::size_t>(u * k + j)]) + " is out of range for axis " +
                         std::to_string(j) + " of data " + data.shape().str());
      row = row * d + v;
    }
    rows[static_cast<std::size_t>(u)] = row;
  }
  const bool constant = !data.requires_grad() && !data.creator() && !upd.requires_grad() && !upd.creator();
  if (constant || is_int(data)) {
    const DType dt = is_int(data) ? int64 : float64;
    const Tensor dh = data.data().to_cpu().astype(dt), uh = upd.data().to_cpu().astype(dt);
    Tensor out;
    if (dt == int64) {
      std::vector<std::int64_t> y = dh.to_vector<std::int64_t>(), uv = uh.to_vector<std::int64_t>();
      for (std::int64_t u = 0; u < U; ++u)
        for (std::int64_t e = 0; e < S; ++e) {
          std::int64_t& t = y[static_cast<std::size_t>(rows[static_cast<std::size_t>(u)] * S + e)];
          const std::int64_t x = uv[static_cast<std::size_t>(u * S + e)];
          t = scatter_one(red, t, x);
        }
      out = array(y, data.shape(), int64);
    } else {
      std::vector<double> y = dh.to_vector<double>(), uv = uh.to_vector<double>();
      for (std::int64_t u = 0; u < U; ++u)
        for (std::int64_t e = 0; e < S; ++e) {
          double& t = y[static_cast<std::size_t>(rows[static_cast<std::size_t>(u)] * S + e)];
          const double x = uv[static_cast<std::size_t>(u * S + e)];
          t = scatter_one(red, t, x);
        }
      out = array(y, data.shape(), float64);
    }
    return {fixed(out.astype(data.dtype()).to(data.device()))};
  }
  check_output_size(ctx, {D, U}, "one-hot matrix of the index rows");
  const DType dt = data.dtype();
  Variable x = F::reshape(data, Shape{D, S}), u2 = F::reshape(upd, Shape{U, S});
  // round[u]: how many earlier tuples named u's row (always 0 for "none" and "add")
  std::vector<int> round(static_cast<std::size_t>(U), 0), seen(static_cast<std::size_t>(D), 0);
  int rounds = 1;
  const bool extreme = red == "max" || red == "min";
  if (red == "mul" || extreme)
    for (std::int64_t u = 0; u < U; ++u) {
      round[static_cast<std::size_t>(u)] = seen[static_cast<std::size_t>(rows[static_cast<std::size_t>(u)])]++;
      rounds = std::max(rounds, round[static_cast<std::size_t>(u)] + 1);
    }
  Variable y = x;
  for (int rd = 0; rd < rounds; ++rd) {
    std::vector<double> onehot(static_cast<std::size_t>(D * U), 0.0), keep(static_cast<std::size_t>(D), 1.0);
    for (std::int64_t u = 0; u < U; ++u) {
      if (round[static_cast<std::size_t>(u)] != rd) continue;
      const std::size_t row = static_cast<std::size_t>(rows[static_cast<std::size_t>(u)]);
      onehot[row * static_cast<std::size_t>(U) + static_cast<std::size_t>(u)] = 1.0;
      if (red != "add") keep[row] = 0.0;
    }
    Variable P = fixed(array(onehot, Shape{D, U}, float64).astype(dt).to(data.device()));
    Variable K = fixed(array(keep, Shape{D, 1}, float64).astype(dt).to(data.device()));
    Variable written = F::matmul(P, u2);  // each named row's update, 0 elsewhere
    if (extreme) {
      const Tensor named = dezero::broadcast_to(dezero::equal(K.data(), zeros_like(K.data())), Shape{D, S});
      y = F::where(named, red == "max" ? F::maximum(y, written) : F::minimum(y, written), y);
    } else {
      y = red == "mul" ? y * (written + K) : y * K + written;
    }
  }
  return {F::reshape(y, data.shape())};
}

}  // namespace

void register_index_ops(OpTable& table) {
  table.push_back(simple("Gather", 7, 20, {"axis"}, [](OpContext& ctx) -> VariableList {
    const Variable& x = ctx.input(0);
    if (x.ndim() == 0) ctx.malformed("cannot gather from a 0-d tensor");
    const int axis = axis_in(ctx, ctx.attrs().i("axis", 0), x.ndim());
    const Tensor& idx = ctx.input(1).data();
    if (!is_integer(idx.dtype())) ctx.malformed(std::string("indices must be integers, got ") + dtype_name(idx.dtype()));
    Indices ix(static_cast<std::size_t>(axis), Index(Slice()));
    if (idx.ndim() == 0) ix.emplace_back(idx.to_cpu().astype(int64).item<std::int64_t>());
    else ix.emplace_back(on(idx, x.device()));
    if (is_int(x)) return {fixed(dezero::get_item(x.data(), ix))};
    return {F::get_item(x, ix)};
  }));
  table.push_back(simple("GatherElements", 11, 20, {"axis"}, [](OpContext& ctx) -> VariableList {
    return {gather_elements(ctx, ctx.input(0), ctx.input(1).data(), ctx.attrs().i("axis", 0))};
  }));
  table.push_back(simple("ScatterND", 11, 15, {}, run_scatter_nd));
  table.push_back(simple("ScatterND", 16, 17, {"reduction"}, run_scatter_nd, [](const Attrs& a) {
    const std::string r = a.s("reduction", "none");
    if (r != "none" && r != "add" && r != "mul")
      unsupported(a.node, a.opset, "reduction '" + r + "' (none, add and mul are; max and min from opset 18)");
  }));
  table.push_back(simple("ScatterND", 18, 20, {"reduction"}, run_scatter_nd, [](const Attrs& a) {
    const std::string r = a.s("reduction", "none");
    if (r != "none" && r != "add" && r != "mul" && r != "max" && r != "min")
      unsupported(a.node, a.opset, "reduction '" + r + "' (none, add, mul, max and min are)");
  }));
}

}  // namespace dezero::onnx::detail
