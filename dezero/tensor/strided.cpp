// dezero/tensor/strided.cpp - the strided views that tensor/*.cpp hand to the backends.
//
// A Strided (backend/backend.hpp) is a shape and per-axis element strides of at most
// kMaxDims axes. Tensors are contiguous, so every view starts as make_contiguous;
// make_broadcast gives a right-aligned operand stride 0 on the axes it repeats, and
// coalesce merges axes that are contiguous in all the views of one kernel call, so
// that (2, 3, 4) + (4,) reaches the kernel as (6, 4) views with strides (4, 1) and (0, 1).
// Declared in tensor/strided.hpp; nothing here touches memory or a backend.
#include "dezero/tensor/strided.hpp"

#include <string>

namespace dezero::detail {

// --- contiguous views ------------------------------------------------------------------
Strided make_contiguous(const Shape& shape) {
  if (shape.ndim() > kMaxDims)
    throw ShapeError("tensors have at most " + std::to_string(kMaxDims) + " axes, got shape " + shape.str());
  Strided v;
  v.ndim = shape.ndim();
  std::int64_t acc = 1;
  for (int i = v.ndim - 1; i >= 0; --i) {
    v.shape[i] = shape[i];
    v.strides[i] = acc;
    acc *= shape[i];
  }
  return v;
}

// --- broadcasting ----------------------------------------------------------------------
Strided make_broadcast(const Shape& in, const Shape& out) {
  Strided v = make_contiguous(out);
  int lead = out.ndim() - in.ndim();
  std::int64_t stride = 1;  // in's contiguous stride of axis j, walking from the last axis
  for (int i = out.ndim() - 1; i >= 0; --i) {
    int j = i - lead;
    v.strides[i] = (j < 0 || in[j] == 1) ? 0 : stride;
    if (j >= 0) stride *= in[j];
  }
  return v;
}

// --- coalescing ------------------------------------------------------------------------
void coalesce(Strided* views[], int nviews) {
  Strided& first = *views[0];
  int nd = first.ndim;
  if (nd <= 1) return;
  // Drop axes of extent 1, then merge axis i into i+1 where contiguous in all views.
  int w = 0;
  for (int i = 0; i < nd; ++i) {
    if (first.shape[i] == 1 && nd > 1) continue;
    for (int v = 0; v < nviews; ++v) {
      views[v]->shape[w] = views[v]->shape[i];
      views[v]->strides[w] = views[v]->strides[i];
    }
    ++w;
  }
  if (w == 0) {  // all extents 1
    for (int v = 0; v < nviews; ++v) {
      views[v]->ndim = 1;
      views[v]->shape[0] = 1;
      views[v]->strides[0] = 1;
    }
    return;
  }
  int out = 0;
  for (int i = 1; i < w; ++i) {
    bool merge = true;
    for (int v = 0; v < nviews; ++v)
      if (views[v]->strides[out] != views[v]->strides[i] * views[v]->shape[i]) merge = false;
    if (merge) {
      for (int v = 0; v < nviews; ++v) {
        views[v]->shape[out] *= views[v]->shape[i];
        views[v]->strides[out] = views[v]->strides[i];
      }
    } else {
      ++out;
      for (int v = 0; v < nviews; ++v) {
        views[v]->shape[out] = views[v]->shape[i];
        views[v]->strides[out] = views[v]->strides[i];
      }
    }
  }
  for (int v = 0; v < nviews; ++v) views[v]->ndim = out + 1;
}

void binary_views(const Shape& a, const Shape& b, const Shape& out, Strided& sa, Strided& sb, Strided& so) {
  const std::int64_t na = a.numel(), nb = b.numel(), n = out.numel();
  const bool a_one = na == 1 && a.ndim() <= b.ndim(), b_one = nb == 1 && b.ndim() <= a.ndim();
  if (a == b || a_one || b_one) {
    so.ndim = sa.ndim = sb.ndim = 1;
    so.shape[0] = sa.shape[0] = sb.shape[0] = n;
    so.strides[0] = 1;
    sa.strides[0] = na == 1 && n > 1 ? 0 : 1;
    sb.strides[0] = nb == 1 && n > 1 ? 0 : 1;
    return;
  }
  so = make_contiguous(out);
  sa = make_broadcast(a, out);
  sb = make_broadcast(b, out);
  Strided* views[] = {&so, &sa, &sb};
  coalesce(views, 3);
}

}  // namespace dezero::detail
