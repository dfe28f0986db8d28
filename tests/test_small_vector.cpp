// tests/test_small_vector.cpp - SmallVector (VariableList, TensorList): std::vector's behaviour with the first
// elements inside the object. std::string elements (long enough to live on the
// heap) let the sanitizer build catch a lost destructor or a double free.
#include <dezero/dezero.hpp>
#include <string>
#include <vector>

#include "support/test_util.hpp"

using dezero::SmallVector;
using SV = SmallVector<std::string, 3>;

namespace {
std::string s(int i) { return "element number " + std::to_string(i) + " (kept on the heap)"; }
std::vector<std::string> range(int lo, int hi) {
  std::vector<std::string> v;
  for (int i = lo; i < hi; ++i) v.push_back(s(i));
  return v;
}
}  // namespace

TEST_CASE("small vector: push, grow past the inline capacity, index, iterate") {
  SV v;
  CHECK(v.empty());
  CHECK(v.capacity() == 3);
  for (int i = 0; i < 10; ++i) v.push_back(s(i));  // moves to the heap at the 4th
  CHECK(v.size() == 10);
  CHECK(v.capacity() >= 10);
  CHECK(std::vector<std::string>(v) == range(0, 10));
  CHECK(v.front() == s(0));
  CHECK(v.back() == s(9));
  CHECK(v.at(4) == s(4));
  CHECK_THROWS_AS(v.at(10), std::out_of_range);
  v.pop_back();
  CHECK(v.size() == 9);
  v.emplace_back(v[0]);  // an element of itself, while full or not
  CHECK(v.back() == s(0));
  SV w{s(1)};
  w.emplace_back(w[0]);
  w.emplace_back(w[1]);
  w.emplace_back(w[0]);  // grows while the argument refers into the old storage
  CHECK(std::vector<std::string>(w) == std::vector<std::string>(4, s(1)));
}

TEST_CASE("small vector: copies and moves, inline and on the heap") {
  for (int n : {2, 3, 7}) {
    CAPTURE(n);
    SV a(range(0, n));
    SV b(a);
    CHECK(b == a);
    SV c(std::move(b));
    CHECK(c == a);
    CHECK(b.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty
    SV d{s(100), s(101), s(102), s(103)};
    d = c;
    CHECK(d == a);
    d = std::move(c);
    CHECK(d == a);
    SV e;
    e = std::move(d);
    CHECK(e == a);
    e = e;  // NOLINT self-assignment keeps the elements
    CHECK(e == a);
    std::vector<std::string> back = std::move(e);
    CHECK(back == range(0, n));
    SV f{s(5)};
    swap(a, f);
    CHECK(a.size() == 1);
    CHECK(std::vector<std::string>(f) == range(0, n));
  }
}

TEST_CASE("small vector: insert, erase, resize, assign") {
  SV v(range(0, 2));
  v.insert(v.begin() + 1, s(10));
  CHECK(std::vector<std::string>(v) == std::vector<std::string>{s(0), s(10), s(1)});
  std::vector<std::string> more = range(20, 24);
  auto it = v.insert(v.begin(), more.begin(), more.end());
  CHECK(it == v.begin());
  CHECK(v.size() == 7);
  CHECK(v[0] == s(20));
  CHECK(v[4] == s(0));
  v.insert(v.end(), v.begin(), v.begin() + 2);  // a range of itself
  CHECK(v.size() == 9);
  CHECK(v[7] == s(20));
  CHECK(v[8] == s(21));
  it = v.erase(v.begin() + 1, v.begin() + 4);
  CHECK(*it == s(0));
  CHECK(std::vector<std::string>(v) == std::vector<std::string>{s(20), s(0), s(10), s(1), s(20), s(21)});
  v.erase(v.begin());
  CHECK(v.front() == s(0));
  v.resize(2);
  CHECK(std::vector<std::string>(v) == std::vector<std::string>{s(0), s(10)});
  v.resize(4, s(7));
  CHECK(v[3] == s(7));
  v.resize(5);
  CHECK(v[4].empty());
  v.assign(2, s(8));
  CHECK(std::vector<std::string>(v) == std::vector<std::string>(2, s(8)));
  v.assign({s(1), s(2), s(3), s(4)});
  CHECK(v.size() == 4);
  v.clear();
  CHECK(v.empty());
  CHECK(SV(3, s(1)) != SV(2, s(1)));
}

TEST_CASE("small vector: VariableList and TensorList accept and give std::vectors") {
  using namespace dezero;
  std::vector<Variable> vs{Variable(array({1.0})), Variable(array({2.0}))};
  VariableList list = vs;
  CHECK(list.size() == 2);
  std::vector<Variable> back = list;
  CHECK(back[1].data().item<double>() == 2.0);
  TensorList ts(4);
  CHECK(ts.size() == 4);
  CHECK(!ts[3].defined());
}
