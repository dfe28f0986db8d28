#include "test_util.hpp"

using namespace dezero;

TEST_CASE("smoke: step 33 Newton") {
  Variable x(array(2.0));
  std::vector<double> seq;
  for (int i = 0; i < 4; ++i) {
    seq.push_back(x.data().item<double>());
    Variable y = x.pow(4) - 2.0 * x.pow(2);
    x.cleargrad();
    y.backward(false, true);
    Variable gx = x.grad();
    x.cleargrad();
    gx.backward();
    Variable gx2 = x.grad();
    x.set_data(x.data() - gx.data() / gx2.data());
  }
  CHECK(seq[1] == doctest::Approx(1.4545454545454546).epsilon(1e-15));
  CHECK(seq[2] == doctest::Approx(1.1510467893775467).epsilon(1e-15));
}
