// examples/step28.cpp - Step 28: function optimisation. Gradient descent on the
// Rosenbrock function from (0, 2), lr 0.001, 1000 iterations: the first use of
// gradients to minimise something. Prints (x0, x1) before each update, like the
// book (1000 lines; the minimum is at (1, 1), which 1000 steps do not reach).
//
// The DeZero Python it mirrors (steps/step28.py, with core_simple):
//   def rosenbrock(x0, x1):
//       y = 100 * (x1 - x0 ** 2) ** 2 + (x0 - 1) ** 2
//       return y
//   x0 = Variable(np.array(0.0)); x1 = Variable(np.array(2.0))
//   iters = 1000; lr = 0.001
//   for i in range(iters):
//       print(x0, x1)
//       y = rosenbrock(x0, x1)
//       x0.cleargrad(); x1.cleargrad()
//       y.backward()
//       x0.data -= lr * x0.grad
//       x1.data -= lr * x1.grad
// Last (x0, x1) printed: variable(0.6834917840420289) variable(0.46565059996514135)
//
// The book's figure (the path over the contour lines of the function) is drawn by
// gnuplot into step28.png from step28_path.csv and step28_rosenbrock.csv (a grid of
// f(x0, x1)); examples/common/plot.hpp, which prints the gnuplot command without it.
#include <dezero/dezero.hpp>

#include <fstream>
#include <iostream>
#include <vector>

#include "common/plot.hpp"
#include "common/report.hpp"

using dezero::Variable;

Variable rosenbrock(const Variable& x0, const Variable& x1) {
  Variable y = 100 * (x1 - x0.pow(2)).pow(2) + (x0 - 1).pow(2);
  return y;
}

int main() try {
  Variable x0(dezero::array(0.0));
  Variable x1(dezero::array(2.0));
  const int iters = 1000;
  const double lr = 0.001;

  std::vector<std::pair<double, double>> path;
  for (int i = 0; i < iters; ++i) {
    std::cout << x0 << " " << x1 << "\n";
    path.emplace_back(x0.data().item<double>(), x1.data().item<double>());

    Variable y = rosenbrock(x0, x1);

    x0.cleargrad();
    x1.cleargrad();
    y.backward();

    x0.set_data(x0.data() - lr * x0.grad().data());
    x1.set_data(x1.data() - lr * x1.grad().data());
  }
  path.emplace_back(x0.data().item<double>(), x1.data().item<double>());

  // --- the figure: the path of (x0, x1) over contour lines of the Rosenbrock function ---
  {
    std::ofstream out("step28_path.csv");
    out.precision(12);
    out << "iteration,x0,x1\n";
    for (std::size_t i = 0; i < path.size(); ++i) out << i << "," << path[i].first << "," << path[i].second << "\n";
    std::ofstream grid("step28_rosenbrock.csv");  // splot's grid format: a blank line after each x0
    grid << "x0,x1,f\n";
    for (int i = 0; i <= 160; ++i) {
      for (int j = 0; j <= 160; ++j) {
        double a = -2.0 + 4.0 * i / 160, b = -1.0 + 4.0 * j / 160;
        grid << a << "," << b << "," << 100 * (b - a * a) * (b - a * a) + (a - 1) * (a - 1) << "\n";
      }
      grid << "\n";
    }
    std::ofstream marks("step28_marks.csv");  // start, end, minimum
    marks.precision(12);
    marks << "x0,x1\n0,2\n" << path.back().first << "," << path.back().second << "\n1,1\n";
  }
  std::cout << "wrote step28_path.csv, step28_rosenbrock.csv and step28_marks.csv\n";
  plot::Panel panel{"f(x0, x1) = 100 (x1 - x0^2)^2 + (x0 - 1)^2", "x0", "x1", {}, ""};
  panel.layers = {
      {"step28_rosenbrock.csv", "1:2:3", "f = 1, 4, 16, 64, 256, 1024", "lines lc rgb '#a0a0a0'", true},
      {"step28_path.csv", "2:3", "path of (x0, x1)", "lines lw 2 lc rgb '#1f77b4'"},
      {"step28_marks.csv", "1:($0 == 0 ? $2 : NaN)", "start (0, 2)", "points pt 7 ps 1.5 lc rgb '#2ca02c'"},
      {"step28_marks.csv", "1:($0 == 1 ? $2 : NaN)", "after 1000 steps", "points pt 7 ps 1.5 lc rgb '#d62728'"},
      {"step28_marks.csv", "1:($0 == 2 ? $2 : NaN)", "minimum (1, 1)", "points pt 3 ps 2.5 lw 2 lc rgb 'black'"}};
  panel.setup =
      "set cntrparam levels discrete 1, 4, 16, 64, 256, 1024\nset xrange [-2:2]\nset yrange [-1:3]\n"
      "set size ratio -1\nset key outside right top";
  plot::draw("step28.png", plot::Figure{"Step 28: gradient descent on the Rosenbrock function (lr 0.001, 1000 steps)", {panel}, 900, 640});
} catch (const std::exception& e) {
  return example::report_error("step28", e);
}
