// dezero/tensor/tensor.cpp - Storage and the members of Tensor.
//
// What tensor.hpp's Storage and Tensor sections declare: allocation through the
// device's backend, element access (data<T>, item<T>, to_vector<T>), the
// conversions astype / to / reshape / copy / transpose, fill_ and the in-place
// operators. The free functions live in one file per section of tensor.hpp
// (creation.cpp, elementwise.cpp, shape.cpp, linalg.cpp, reduce.cpp, index.cpp,
// random.cpp, print.cpp); strided.cpp and checks.cpp hold what they share.
// Validation happens here; the arithmetic runs in the backend of the tensor's
// device (backend/backend.hpp).
#include "dezero/tensor.hpp"
#include "dezero/tensor/memory_cap.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "dezero/tensor/strided.hpp"
#include "dezero/thread_state.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero {

using detail::backend_for;
using detail::backend_of;
using detail::Strided;
using detail::UnaryOp;

// --- Storage ---------------------------------------------------------------------------
// Storage::allocation_count / live_count / live_bytes: counted per thread, without a locked
// instruction (every recorded op makes a Storage: three shared atomic counters cost more than
// the rest of a small op's bookkeeping), and summed over the threads when read.
namespace {
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kInlineStorage = false;
#else
constexpr bool kInlineStorage = true;
#endif

struct StorageCounters {
  // Written by the owning thread only (a plain load and store), read by any under the registry's lock.
  std::atomic<std::int64_t> allocations{0}, live{0}, live_bytes{0};
  StorageCounters* next = nullptr;
  StorageCounters* prev = nullptr;
  static void bump(std::atomic<std::int64_t>& c, std::int64_t d) {
    c.store(c.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);
  }
};
struct CounterRegistry {
  std::mutex mu;
  StorageCounters* threads = nullptr;
  std::atomic<std::int64_t> allocations{0}, live{0}, live_bytes{0};  // threads that ended, and late counts
  std::int64_t sum(std::atomic<std::int64_t> StorageCounters::*field, const std::atomic<std::int64_t>& retired) {
    std::lock_guard<std::mutex> lock(mu);
    std::int64_t total = retired.load(std::memory_order_relaxed);
    for (StorageCounters* c = threads; c; c = c->next) total += (c->*field).load(std::memory_order_relaxed);
    return total;
  }
};
CounterRegistry& registry() {
  static CounterRegistry* r = new CounterRegistry;  // never destroyed: storages die until the process ends
  return *r;
}
// This thread's counters (thread_state.hpp), in the registry while the thread lives; at
// its end their counts go to the registry's, and later counts go there directly.
struct ThreadCounters {
  StorageCounters c;
  ThreadCounters() {
    CounterRegistry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    c.next = r.threads;
    if (r.threads) r.threads->prev = &c;
    r.threads = &c;
  }
  ~ThreadCounters() {
    CounterRegistry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    r.allocations.fetch_add(c.allocations.load(std::memory_order_relaxed), std::memory_order_relaxed);
    r.live.fetch_add(c.live.load(std::memory_order_relaxed), std::memory_order_relaxed);
    r.live_bytes.fetch_add(c.live_bytes.load(std::memory_order_relaxed), std::memory_order_relaxed);
    if (c.prev) c.prev->next = c.next;
    else r.threads = c.next;
    if (c.next) c.next->prev = c.prev;
  }
  ThreadCounters(const ThreadCounters&) = delete;
  ThreadCounters& operator=(const ThreadCounters&) = delete;
};
void count_storage(std::int64_t allocations, std::int64_t live, std::int64_t bytes) {
  if (ThreadCounters* t = detail::ThreadState<ThreadCounters>::get()) {
    StorageCounters* c = &t->c;
    StorageCounters::bump(c->allocations, allocations);
    StorageCounters::bump(c->live, live);
    StorageCounters::bump(c->live_bytes, bytes);
    return;
  }
  CounterRegistry& r = registry();  // after this thread's counters were given back
  r.allocations.fetch_add(allocations, std::memory_order_relaxed);
  r.live.fetch_add(live, std::memory_order_relaxed);
  r.live_bytes.fetch_add(bytes, std::memory_order_relaxed);
}
}  // namespace

// --- MemoryCap (tensor/memory_cap.hpp) -------------------------------------------------------------
namespace {
[[gnu::tls_model("initial-exec")]] thread_local detail::MemoryCap* t_memory_cap = nullptr;
std::int64_t thread_live_bytes() {
  ThreadCounters* t = detail::ThreadState<ThreadCounters>::get();
  return t ? t->c.live_bytes.load(std::memory_order_relaxed) : 0;
}
}  // namespace

detail::MemoryCap::MemoryCap(std::int64_t limit, Describe describe)
    : limit_(limit), start_(thread_live_bytes()), describe_(std::move(describe)), prev_(t_memory_cap) {
  t_memory_cap = this;
}
detail::MemoryCap::~MemoryCap() { t_memory_cap = prev_; }
void detail::MemoryCap::check(std::size_t nbytes) {
  const MemoryCap* c = t_memory_cap;
  if (!c) return;
  const std::int64_t held = thread_live_bytes() - c->start_;
  const std::int64_t asked = static_cast<std::int64_t>(std::min<std::size_t>(nbytes, std::size_t{1} << 62));
  if (asked > c->limit_ - std::min(held, c->limit_)) throw ValueError(c->describe_(asked, held));
}

Storage::Storage(std::size_t nbytes, Device device) : cuda_(device.is_cuda()) {
  if (device.is_cuda()) {
    if (device.index() < 0 || device.index() > 32767)
      detail::fail<DeviceError>("Storage", "no CUDA device ", device, "; hint: device ids count from 0");
    index_ = static_cast<std::int16_t>(device.index());
  }
  if (kInlineStorage && nbytes <= kInlineBytes && device.is_cpu()) {
    small_n_ = static_cast<std::uint8_t>(nbytes);
  } else {
    detail::MemoryCap::check(nbytes);
    u_.big.ptr = backend_for(device).allocate(nbytes);
    u_.big.nbytes = nbytes;
  }
  count_storage(1, 1, static_cast<std::int64_t>(nbytes));
}
std::uint64_t Storage::allocation_count() {
  CounterRegistry& r = registry();
  return static_cast<std::uint64_t>(r.sum(&StorageCounters::allocations, r.allocations));
}
std::uint64_t Storage::live_count() {
  CounterRegistry& r = registry();
  return static_cast<std::uint64_t>(r.sum(&StorageCounters::live, r.live));
}
std::uint64_t Storage::live_bytes() {
  CounterRegistry& r = registry();
  return static_cast<std::uint64_t>(r.sum(&StorageCounters::live_bytes, r.live_bytes));
}
Storage::~Storage() {
  count_storage(0, -1, -static_cast<std::int64_t>(nbytes()));
  if (!inline_data() && u_.big.ptr) {
    try {
      backend_for(device()).deallocate(u_.big.ptr, u_.big.nbytes);
    } catch (...) {  // never throw from a destructor
    }
  }
}

StoragePtr StoragePtr::allocate(std::size_t nbytes, Device device) {
  void* mem = detail::small_alloc(sizeof(Storage));
  try {
    return StoragePtr(new (mem) Storage(nbytes, device));
  } catch (...) {
    detail::small_free(mem, sizeof(Storage));
    throw;
  }
}
void StoragePtr::destroy(Storage* p) noexcept {
  p->~Storage();
  detail::small_free(p, sizeof(Storage));
}

// --- Tensor: construction and element access -------------------------------------------
Tensor::Tensor(StoragePtr storage, std::int64_t offset, Shape shape, DType dtype)
    : storage_(std::move(storage)), shape_(std::move(shape)) {
  shape_.checked_numel("Tensor");
  if (shape_.ndim() > detail::kMaxDims)
    detail::fail<ShapeError>("Tensor", "at most ", detail::kMaxDims, " axes are supported, got ", shape_);
  if (offset < 0 || static_cast<std::uint64_t>(offset) > kOffsetMask)
    detail::fail<ValueError>("Tensor", "offset ", offset, " is out of range; hint: offsets count elements "
                             "from the start of the storage, 0 to 2^56 - 1");
  word_ = static_cast<std::uint64_t>(offset);
  set_dtype(dtype);
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device, const char* op) {
  std::size_t n = shape.checked_nbytes(op, dtype_size(dtype));
  if (shape.ndim() > detail::kMaxDims)
    detail::fail<ShapeError>(op, "at most ", std::to_string(detail::kMaxDims), " axes are supported, got ",
                             shape.str());
  Tensor t;  // shape and size are checked: no second pass through the constructor's checks
  t.storage_ = StoragePtr::allocate(n, device);
  t.shape_ = shape;
  t.set_dtype(dtype);
  return t;
}

std::int64_t Tensor::len() const {
  detail::check_defined("len", *this);
  if (ndim() == 0) detail::fail<ShapeError>("len", "len() of a 0-d tensor (shape ()); hint: use item<T>()");
  return shape_[0];
}

template <class T>
T* Tensor::data() const {
  detail::check_defined("data", *this);
  if (dtype_of<T>() != dtype())
    throw DtypeError(std::string("data<") + dtype_name(dtype_of<T>()) + ">: the tensor is " + dtype_name(dtype()) +
                     "; hint: use astype() first");
  if (!device().is_cpu())
    detail::fail<DeviceError>("data<T>", "the tensor lives on ", device(),
                              "; hint: call to_cpu() to read it on the host");
  return static_cast<T*>(raw_data());
}

template <class T>
T Tensor::item() const {
  detail::check_defined("item", *this);
  if (size() != 1)
    detail::fail<ValueError>("item", "can only convert a tensor of size 1 to a scalar, got shape ", shape_.str());
  return to_vector<T>()[0];
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  detail::check_defined("to_vector", *this);
  Tensor h = to_cpu();
  if (h.dtype() != dtype_of<T>()) h = h.astype(dtype_of<T>());
  const T* p = static_cast<const T*>(h.raw_data());
  return std::vector<T>(p, p + size());
}

#define DEZERO_INSTANTIATE_ACCESS(T)          \
  template T* Tensor::data<T>() const;        \
  template T Tensor::item<T>() const;         \
  template std::vector<T> Tensor::to_vector<T>() const;
DEZERO_INSTANTIATE_ACCESS(float)
DEZERO_INSTANTIATE_ACCESS(double)
DEZERO_INSTANTIATE_ACCESS(std::int32_t)
DEZERO_INSTANTIATE_ACCESS(std::int64_t)
DEZERO_INSTANTIATE_ACCESS(bfloat16_t)
DEZERO_INSTANTIATE_ACCESS(float16_t)
#undef DEZERO_INSTANTIATE_ACCESS

// --- conversions: astype, to, reshape, copy, transpose ---------------------------------
Tensor Tensor::astype(DType dtype) const {
  detail::check_defined("astype", *this);
  Tensor y = Tensor::empty(shape_, dtype, device());
  if (size() > 0) backend_of(*this).cast(this->dtype(), raw_data(), dtype, y.raw_data(), size());
  return y;
}

Tensor Tensor::to(Device dev) const {
  detail::check_defined("to", *this);
  if (dev == device()) return *this;
  Tensor y = Tensor::empty(shape_, dtype(), dev);
  if (size() == 0) return y;
  if (device().is_cpu()) {
    backend_for(dev).copy_from_host(y.raw_data(), raw_data(), nbytes());
  } else if (dev.is_cpu()) {
    backend_of(*this).copy_to_host(y.raw_data(), raw_data(), nbytes());
  } else {  // GPU -> another GPU through the host (peer copies: cuda::copy)
    std::vector<char> tmp(nbytes());
    backend_of(*this).copy_to_host(tmp.data(), raw_data(), nbytes());
    backend_for(dev).copy_from_host(y.raw_data(), tmp.data(), nbytes());
  }
  return y;
}

Tensor Tensor::reshape(const Shape& shape) const {
  detail::check_defined("reshape", *this);
  Shape s = shape;
  int infer = -1;
  std::int64_t known = 1;  // the product of the known non-zero extents
  bool known_zero = false;
  for (int i = 0; i < s.ndim(); ++i) {
    if (s[i] == -1) {
      if (infer >= 0) detail::fail<ShapeError>("reshape", "can only specify one unknown dimension, got ",
                                               shape.str());
      infer = i;
    } else if (s[i] < 0) {
      detail::fail<ShapeError>("reshape", "negative dimension in ", shape.str());
    } else if (s[i] != 0 && __builtin_mul_overflow(known, s[i], &known)) {
      // Refused even beside a zero extent, as Shape::checked_numel does.
      detail::fail<ShapeError>("reshape", "shape ", shape.str(),
                               " has more elements than int64 can count; hint: check the extents (a product past 2^63 - 1)");
    } else if (s[i] == 0) {
      known_zero = true;
    }
  }
  if (infer >= 0) {
    if (known_zero || size() % known != 0)
      detail::fail<ShapeError>("reshape", "cannot reshape array of size ", std::to_string(size()), " (shape ",
                               shape_.str(), ") into shape ", shape.str());
    s[infer] = size() / known;
  }
  if (s.checked_numel("reshape") != size())
    detail::fail<ShapeError>("reshape", "cannot reshape array of size ", std::to_string(size()), " (shape ",
                             shape_.str(), ") into shape ", shape.str(),
                             "; hint: the number of elements must stay the same");
  return Tensor(storage_, offset(), s, dtype());
}

Tensor Tensor::copy() const {
  detail::check_defined("copy", *this);
  Tensor y = Tensor::empty(shape_, dtype(), device());
  if (size() > 0) backend_of(*this).copy(y.raw_data(), raw_data(), nbytes());
  return y;
}

Tensor Tensor::flatten() const { return reshape(Shape{size()}); }

Tensor Tensor::transpose() const {
  std::vector<int> axes(ndim());
  for (int i = 0; i < ndim(); ++i) axes[i] = ndim() - 1 - i;
  return transpose(axes);
}

Tensor Tensor::transpose(const std::vector<int>& axes) const {
  detail::check_defined("transpose", *this);
  if (axes.empty()) return transpose();
  auto axes_str = [&] {
    std::string t = "(";
    for (std::size_t i = 0; i < axes.size(); ++i) t += (i ? ", " : "") + std::to_string(axes[i]);
    return t + (axes.size() == 1 ? ",)" : ")");
  };
  auto hint = [&] {
    return "; hint: axes must be a permutation of 0..ndim-1" +
           (ndim() > 0 ? " (here 0.." + std::to_string(ndim() - 1) + ", negative axes count from the end)"
                       : std::string());
  };
  if (static_cast<int>(axes.size()) != ndim())
    detail::fail<ValueError>("transpose", "axes ", axes_str(), " don't match an array of shape ", shape_.str(), ": ",
                             std::to_string(axes.size()), " axes for ", std::to_string(ndim()), " dimensions",
                             hint());
  std::vector<int> perm(axes.size());
  std::vector<bool> seen(axes.size(), false);
  for (std::size_t i = 0; i < axes.size(); ++i) {
    int a = axes[i] < 0 ? axes[i] + ndim() : axes[i];
    if (a < 0 || a >= ndim())
      detail::fail<IndexError>("transpose", "axis ", std::to_string(axes[i]), " in axes ", axes_str(),
                               " is out of bounds for an array of shape ", shape_.str(), hint());
    if (seen[a])
      detail::fail<ValueError>("transpose", "repeated axis ", std::to_string(axes[i]), " in axes ", axes_str(),
                               " for an array of shape ", shape_.str(), hint());
    seen[a] = true;
    perm[i] = a;
  }
  bool identity = true;
  for (std::size_t i = 0; i < perm.size(); ++i) identity &= (perm[i] == static_cast<int>(i));
  Shape out(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) out[i] = shape_[perm[i]];
  if (identity) return copy();
  Tensor y = Tensor::empty(out, dtype(), device());
  if (size() == 0) return y;
  Strided src = detail::make_contiguous(out);
  auto st = detail::contiguous_strides(shape_);
  for (std::size_t i = 0; i < perm.size(); ++i) src.strides[i] = st[perm[i]];
  Strided dst = detail::make_contiguous(out);
  Strided* views[] = {&dst, &src};
  detail::coalesce(views, 2);
  backend_of(*this).copy_strided(dtype(), raw_data(), src, y.raw_data(), dst, false);
  return y;
}

// --- members that forward to the free functions (reduce.cpp, index.cpp) ----------------
Tensor Tensor::sum(const Axes& axes, bool keepdims) const { return dezero::sum(*this, axes, keepdims); }
Tensor Tensor::mean(const Axes& axes, bool keepdims) const { return dezero::mean(*this, axes, keepdims); }
Tensor Tensor::max(const Axes& axes, bool keepdims) const { return dezero::max(*this, axes, keepdims); }
Tensor Tensor::min(const Axes& axes, bool keepdims) const { return dezero::min(*this, axes, keepdims); }
Tensor Tensor::operator[](const Index& index) const { return get_item(*this, Indices{index}); }
Tensor Tensor::operator[](const Indices& indices) const { return get_item(*this, indices); }

// --- in place: fill_ and the compound assignments --------------------------------------
void Tensor::fill_(double value) {
  detail::check_defined("fill_", *this);
  if (size() > 0) backend_of(*this).fill(dtype(), raw_data(), size(), value);
}

// In-place ops write the broadcast result back into this tensor's storage.
namespace {
void inplace(Tensor& self, const Tensor& result, const char* op) {
  if (result.shape() != self.shape())
    detail::fail<ShapeError>(op, "non-broadcastable output operand with shape ", self.shape(),
                             " doesn't match the broadcast shape ", result.shape());
  copyto(self, result);
}
}  // namespace
Tensor& Tensor::operator+=(const Tensor& o) { inplace(*this, *this + o, "operator+="); return *this; }
Tensor& Tensor::operator-=(const Tensor& o) { inplace(*this, *this - o, "operator-="); return *this; }
Tensor& Tensor::operator*=(const Tensor& o) { inplace(*this, *this * o, "operator*="); return *this; }
Tensor& Tensor::operator/=(const Tensor& o) { inplace(*this, *this / o, "operator/="); return *this; }
Tensor& Tensor::operator+=(double s) {
  detail::check_defined("operator+=", *this);
  if (is_half(dtype())) { inplace(*this, *this + s, "operator+="); return *this; }  // through float32
  backend_of(*this).unary(UnaryOp::AddScalar, dtype(), raw_data(), raw_data(), size(), s);
  return *this;
}
Tensor& Tensor::operator-=(double s) { return *this += -s; }
Tensor& Tensor::operator*=(double s) {
  detail::check_defined("operator*=", *this);
  if (is_half(dtype())) { inplace(*this, *this * s, "operator*="); return *this; }  // through float32
  backend_of(*this).unary(UnaryOp::MulScalar, dtype(), raw_data(), raw_data(), size(), s);
  return *this;
}
Tensor& Tensor::operator/=(double s) {
  if (is_integer(dtype())) { inplace(*this, *this / s, "operator/="); return *this; }
  return *this *= (1.0 / s);
}

}  // namespace dezero
