// examples/step07.cpp - Step 7: automatic backpropagation. A Function remembers
// its input and its output remembers the Function (its creator), so the graph can
// be walked back from y to x. First by hand along creator() / input(), then with
// y.backward(), which does the walk for us. Both print 3.297442541400256.
//
// The DeZero Python it mirrors (steps/step07.py):
//   A = Square(); B = Exp(); C = Square()
//   x = Variable(np.array(0.5))
//   a = A(x); b = B(a); y = C(b)
//   assert y.creator == C
//   assert y.creator.input == b
//   assert y.creator.input.creator == B
//   assert y.creator.input.creator.input == a
//   assert y.creator.input.creator.input.creator == A
//   assert y.creator.input.creator.input.creator.input == x
//   y.grad = np.array(1.0)
//   C = y.creator; b = C.input; b.grad = C.backward(y.grad)
//   B = b.creator; a = B.input; a.grad = B.backward(b.grad)
//   A = a.creator; x = A.input; x.grad = A.backward(a.grad)
//   print(x.grad)     # 3.297442541400256
//   # with Variable.backward (recursive in the book):
//   y.grad = np.array(1.0)
//   y.backward()
//   print(x.grad)     # 3.297442541400256
#include <dezero/dezero.hpp>

#include <iostream>
#include <memory>
#include <stdexcept>

#include "common/report.hpp"

using dezero::Variable;
namespace F = dezero::F;

class Square : public dezero::Function {
 public:
  dezero::TensorList forward(const dezero::TensorList& xs) override { return {xs[0] * xs[0]}; }
  dezero::VariableList backward(const dezero::VariableList& gys) override { return {2.0 * input(0) * gys[0]}; }
};

class Exp : public dezero::Function {
 public:
  dezero::TensorList forward(const dezero::TensorList& xs) override { return {dezero::exp(xs[0])}; }
  dezero::VariableList backward(const dezero::VariableList& gys) override { return {F::exp(input(0)) * gys[0]}; }
};

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("assertion failed: ") + what);
}

int main() try {
  auto A = std::make_shared<Square>();
  auto B = std::make_shared<Exp>();
  auto C = std::make_shared<Square>();

  Variable x(dezero::array(0.5));
  Variable a = (*A)(x);
  Variable b = (*B)(a);
  Variable y = (*C)(b);

  // The graph links (a Variable handle compares by node with is_same).
  check(y.creator() == C, "y.creator == C");
  check(y.creator()->input(0).is_same(b), "y.creator.input == b");
  check(y.creator()->input(0).creator() == B, "y.creator.input.creator == B");
  check(y.creator()->input(0).creator()->input(0).is_same(a), "y.creator.input.creator.input == a");
  check(y.creator()->input(0).creator()->input(0).creator() == A, "... .creator == A");
  check(y.creator()->input(0).creator()->input(0).creator()->input(0).is_same(x), "... .input == x");
  std::cout << "the graph links y -> C -> b -> B -> a -> A -> x\n";

  // Backward by hand, following the links.
  y.set_grad(Variable(dezero::array(1.0)));
  {
    auto C_ = y.creator();
    Variable b_ = C_->input(0);
    b_.set_grad(C_->backward({y.grad()})[0]);
    auto B_ = b_.creator();
    Variable a_ = B_->input(0);
    a_.set_grad(B_->backward({b_.grad()})[0]);
    auto A_ = a_.creator();
    Variable x_ = A_->input(0);
    x_.set_grad(A_->backward({a_.grad()})[0]);
  }
  std::cout << x.grad().data() << "\n";

  // The same walk, automated.
  for (Variable* v : {&x, &a, &b, &y}) v->cleargrad();  // else the new gradients add to these (step 14)
  y.backward();
  std::cout << x.grad().data() << "\n";
  return 0;
} catch (const std::exception& e) {
  return example::report_error("step07", e);
}
