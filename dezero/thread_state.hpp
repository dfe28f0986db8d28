// dezero/thread_state.hpp - one object per thread, reached without a TLS guard or a call
// (internal, not installed; included by the library's .cpp files only).
//
// The library's per-thread state (the small-object pool's cache, the release queue of
// dropped graphs, backward's queue buffer, the Storage counters) is touched on every
// op. A function-local `static thread_local T` would pay a guard check, and in a shared
// library a __tls_get_addr call, per access. ThreadState<T>::get() reads one
// initial-exec pointer instead and makes the object on the thread's first call.
//
// When the thread ends, the object is destroyed like any thread_local (T's destructor
// does its own clean-up: flush a cache, fold counters into a global), and get() returns
// nullptr from then on: a graph held in a user's thread_local and freed after this must
// take the caller's slow path instead of reaching a destroyed object.
#pragma once

namespace dezero::detail {

template <class T>
class ThreadState {
 public:
  // This thread's T, made on the first call; nullptr once the thread's T is destroyed.
  static T* get() { return ptr_ ? ptr_ : make(); }
  // This thread's T if it has been made and still lives, else nullptr (never makes one).
  static T* peek() { return ptr_; }

 private:
  struct Owner {
    T value;
    ~Owner() {  // runs before value's destructor: a use from it sees nullptr
      ptr_ = nullptr;
      done_ = true;
    }
  };
  [[gnu::noinline]] static T* make() {
    if (done_) return nullptr;
    static thread_local Owner owner;
    return ptr_ = &owner.value;
  }
  [[gnu::tls_model("initial-exec")]] static inline thread_local T* ptr_ = nullptr;
  [[gnu::tls_model("initial-exec")]] static inline thread_local bool done_ = false;
};

}  // namespace dezero::detail
