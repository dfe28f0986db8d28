// examples/onnx_run.cpp - load any ONNX model (dezero::onnx::OnnxModel), say what it is, run it,
// and optionally fine-tune it: the imported graph is made of DeZero Functions, so backward() and
// the optimizers work on it.
//
//   onnx_run MODEL.onnx [--input FILE.npy|FILE.png|FILE.jpg|FILE.bmp] [--batch N] [--seed N] [--plan]
//                       [--finetune N [--data FILE.npz] [--lr R] [--save FILE.npz]]
//
// It prints the model's inputs and outputs (names, dtypes, shapes with their symbols), its op
// types with their counts and its number of parameters, then runs it in test mode (BatchNorm
// with its running statistics, as PyTorch's eval()) on:
//   --input FILE.npy   a NumPy array: the input's shape, or that shape without the batch axis
//   --input IMAGE      a picture (utils::load_image), scaled to 0-1, made gray for one channel,
//                      resized to the input's height and width; an (N, D) input with D = S * S
//                      takes an S x S gray picture flattened (an MNIST MLP)
//   nothing            random normal values of the input's shape, its symbols ("batch") = --batch
// and prints the outputs (for a classifier, (N, C): each sample's argmax and its probability).
// --plan: the same inference through dezero::compile (a plan for these input shapes), its outputs,
// how far they are from the unplanned ones, and both times (the median of 10 calls each).
// --finetune N: N SGD steps (--lr, default 0.01) on the x and t of --data FILE.npz, or on random
// data (t: labels for an (N, C) output, softmax cross entropy; else values, mean squared error),
// printing the loss; still in test mode (BatchNorm's statistics stay as imported). --save writes
// the fine-tuned weights (Layer::save_weights: the keys are the ONNX initializer names).
#include <dezero/dezero.hpp>
#include <dezero/image.hpp>
#include <dezero/npz.hpp>
#include <dezero/onnx.hpp>
#include <dezero/optimizers.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/options.hpp"
#include "common/report.hpp"

using namespace dezero;

namespace {

struct Options {
  std::string model, input, data, save;
  std::int64_t batch = 1, seed = 0, finetune = 0;
  double lr = 0.01;
  bool plan = false;
};

Options parse(int argc, char** argv) {
  Options o;
  example::for_each_option(argc, argv, [&](const std::string& a, const std::function<std::string()>& value) {
    if (a == "--input") o.input = value();
    else if (a == "--batch") o.batch = example::integer_option(a, value(), 1);
    else if (a == "--seed") o.seed = example::integer_option(a, value(), 0);
    else if (a == "--finetune") o.finetune = example::integer_option(a, value(), 0);
    else if (a == "--data") o.data = value();
    else if (a == "--lr") {
      const std::string v = value();
      std::size_t used = 0;
      try {
        o.lr = std::stod(v, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (v.empty() || used != v.size() || !(o.lr > 0)) throw ValueError("--lr needs a number > 0, got '" + v + "'");
    } else if (a == "--save") o.save = value();
    else if (a == "--plan") o.plan = true;
    else if (a == "-h" || a == "--help") {
      std::cout << "usage: onnx_run MODEL.onnx [--input FILE.npy|IMAGE] [--batch N] [--seed N] [--plan]\n"
                   "                [--finetune N [--data FILE.npz] [--lr R] [--save FILE.npz]]\n";
      std::exit(0);
    } else if (a.rfind("--", 0) == 0) {
      throw ValueError("unknown option " + a + " (onnx_run --help lists them)");
    } else if (o.model.empty()) {
      o.model = a;
    } else {
      throw ValueError("one model at a time: got " + o.model + " and " + a);
    }
    return true;
  });
  if (o.model.empty()) throw ValueError("no model: onnx_run MODEL.onnx [options] (onnx_run --help)");
  return o;
}

// --- what the model declares ----------------------------------------------------------------------
// "(batch, 1, 28, 28)"
std::string dims(const onnx::ValueInfo& v) {
  std::string s = "(";
  for (std::size_t i = 0; i < v.shape.size(); ++i) {
    if (i) s += ", ";
    const bool symbol = i < v.dim_params.size() && !v.dim_params[i].empty();
    s += symbol ? v.dim_params[i] : v.shape[i] < 0 ? std::string("?") : std::to_string(v.shape[i]);
  }
  return s + (v.shape.size() == 1 ? ",)" : ")");
}

// The declared shape with every symbolic or unknown dimension = `batch`.
Shape concrete(const onnx::ValueInfo& v, std::int64_t batch) {
  Shape s;
  for (std::int64_t d : v.shape) s.push_back(d < 0 ? batch : d);
  return s;
}

void describe(const onnx::OnnxModel& m) {
  std::cout << "producer: " << (m.producer().empty() ? std::string("(not named)") : m.producer()) << ", opset "
            << m.opset_version() << "\n";
  std::cout << "inputs:\n";
  for (const auto& v : m.input_info()) std::cout << "  " << v.name << "  " << dtype_name(v.dtype) << "  " << dims(v) << "\n";
  std::cout << "outputs:\n";
  for (const auto& v : m.output_info()) std::cout << "  " << v.name << "  " << dtype_name(v.dtype) << "  " << dims(v) << "\n";
  // Op types in the order they first appear.
  const std::vector<std::string> ops = m.op_types();
  std::vector<std::pair<std::string, int>> counts;
  for (const auto& op : ops) {
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == op; });
    if (it == counts.end()) counts.emplace_back(op, 1);
    else ++it->second;
  }
  std::cout << "ops: " << ops.size() << " nodes:";
  for (std::size_t i = 0; i < counts.size(); ++i)
    std::cout << (i ? ", " : " ") << counts[i].first << " x" << counts[i].second;
  std::cout << "\n";
  std::int64_t values = 0;
  const auto params = m.params();
  for (const Parameter& p : params) values += p.size();
  std::cout << "parameters: " << params.size() << " arrays, " << values << " values\n";
}

// --- inputs ---------------------------------------------------------------------------------------
std::string lower_extension(const std::string& path) {
  const auto dot = path.find_last_of('.');
  std::string ext = dot == std::string::npos ? "" : path.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

Tensor read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw IOError("onnx_run: cannot read " + path);
  std::ostringstream bytes;
  bytes << f.rdbuf();
  return utils::parse_npy(bytes.str(), path);
}

// A picture as the input `v` wants it: (1, C, H, W) with C = 1 or 3, or (1, S * S) gray; 0-1.
Tensor picture_input(const std::string& path, const onnx::ValueInfo& v) {
  Tensor img = utils::load_image(path);  // (H, W, 3) float32, RGB, 0-255
  std::int64_t channels = 0, height = -1, width = -1;
  if (v.shape.size() == 4 && (v.shape[1] == 1 || v.shape[1] == 3)) {
    channels = v.shape[1];
    height = v.shape[2];
    width = v.shape[3];
  } else if (v.shape.size() == 2 && v.shape[1] > 0) {
    const auto side = static_cast<std::int64_t>(std::lround(std::sqrt(static_cast<double>(v.shape[1]))));
    if (side * side == v.shape[1]) channels = 1, height = width = side;
  }
  if (channels == 0)
    throw ValueError("onnx_run: --input " + path + ": input '" + v.name + "' " + dims(v) +
                     " takes no picture (it needs (N, 1 or 3, H, W) or (N, S*S)); hint: give a .npy file");
  if (height < 0) height = img.shape()[0];
  if (width < 0) width = img.shape()[1];
  if (height != img.shape()[0] || width != img.shape()[1]) img = utils::resize_image(img, height, width);
  if (channels == 1) img = img.mean(2, true);                      // (H, W, 1)
  Tensor x = img.transpose({2, 0, 1}) / 255.0;                      // (C, H, W)
  if (v.shape.size() == 2) return x.reshape({1, height * width});  // (1, S * S)
  return x.reshape({1, channels, height, width});
}

// The value of input `v`: from --input (the first input only), else random of its shape.
Tensor make_input(const onnx::ValueInfo& v, const std::string& file, std::int64_t batch, std::string& source) {
  Tensor x;
  if (!file.empty()) {
    const std::string ext = lower_extension(file);
    if (ext == "npy") {
      x = read_npy(file);
      if (x.ndim() + 1 == static_cast<int>(v.shape.size())) {  // one sample without the batch axis
        Shape s{1};
        for (std::int64_t d : x.shape()) s.push_back(d);
        x = x.reshape(s);
      }
    } else if (ext == "png" || ext == "jpg" || ext == "jpeg" || ext == "bmp") {
      x = picture_input(file, v);
    } else {
      throw ValueError("onnx_run: --input " + file + ": not a .npy file or a picture (.png, .jpg, .bmp)");
    }
    source = file;
    return x.astype(v.dtype);
  }
  const Shape s = concrete(v, batch);
  source = "random";
  if (batch != 1 && std::none_of(v.shape.begin(), v.shape.end(), [](std::int64_t d) { return d < 0; }))
    source += " (the shape is fixed: --batch is not used)";
  if (is_floating(v.dtype)) return random::randn(s, v.dtype);
  return zeros(s, v.dtype);
}

// --- outputs --------------------------------------------------------------------------------------
void print_output(const onnx::ValueInfo& info, const Tensor& y) {
  std::cout << "output " << info.name << ": " << y.shape().str() << " " << dtype_name(y.dtype()) << "\n";
  if (y.ndim() == 2 && is_floating(y.dtype()) && y.shape()[1] > 1) {
    // A classifier: each sample's class and its softmax probability.
    const Tensor p = F::softmax(Variable(y.astype(float64))).data();
    const std::vector<std::int64_t> best = y.argmax(1).astype(int64).to_vector<std::int64_t>();
    const std::vector<double> pv = p.to_vector<double>();
    const std::int64_t n = y.shape()[0], c = y.shape()[1];
    for (std::int64_t i = 0; i < std::min<std::int64_t>(n, 10); ++i)
      std::printf("  sample %lld: argmax %lld (p %.4f)\n", static_cast<long long>(i),
                  static_cast<long long>(best[i]), pv[i * c + best[i]]);
    if (n > 10) std::printf("  ... %lld samples\n", static_cast<long long>(n));
  }
  const std::vector<double> v = y.astype(float64).to_vector<double>();
  std::cout << " ";
  for (std::size_t i = 0; i < std::min<std::size_t>(v.size(), 10); ++i) std::printf(" %.6g", v[i]);
  std::cout << (v.size() > 10 ? " ...\n" : "\n");
  std::fflush(stdout);
}

VariableList as_variables(const std::vector<Tensor>& xs) {
  VariableList vs;
  for (const Tensor& x : xs) vs.push_back(Variable(x));
  return vs;
}

// --- a plan for these shapes (--plan) -------------------------------------------------------------------
double median_ms(const std::function<void()>& call) {
  std::vector<double> ms;
  for (int i = 0; i < 10; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

void run_planned(onnx::OnnxModel& m, const VariableList& xs) {
  const Plan plan = compile(m, xs);
  const Plan::Stats st = plan.stats();
  std::printf("plan: %zu recorded Functions: %zu oneDNN ops (%zu fused, %zu batch norms folded), %zu reorders, "
              "%zu replayed\n",
              st.recorded, st.onednn, st.fused, st.folded, st.reorders, st.replayed);
  const VariableList planned = plan(xs);
  VariableList unplanned;
  {
    auto g = no_grad();
    unplanned = m.forward_multi(xs);
  }
  std::printf("planned:\n");
  for (std::size_t i = 0; i < planned.size(); ++i) {
    print_output(m.output_info().at(i), planned[i].data());
    const Tensor a = planned[i].data().astype(float64), b = unplanned[i].data().astype(float64);
    std::printf("  max |planned - unplanned| %.3g (largest |unplanned| %.3g)\n", max(abs(a - b)).item<double>(),
                max(abs(b)).item<double>());
  }
  const double tp = median_ms([&] { (void)plan(xs); });
  const double tu = median_ms([&] {
    auto g = no_grad();
    (void)m.forward_multi(xs);
  });
  std::printf("time per call: planned %.3f ms, unplanned %.3f ms\n", tp, tu);
}

// --- fine-tuning ----------------------------------------------------------------------------------
void finetune(onnx::OnnxModel& m, const Options& o, std::vector<Tensor> xs) {
  const onnx::ValueInfo& out = m.output_info().at(0);
  Tensor t;
  if (!o.data.empty()) {
    std::map<std::string, Tensor> arrays;
    for (auto& [key, a] : utils::load_npz(o.data)) arrays.emplace(key, a);
    if (!arrays.count("x") || !arrays.count("t"))
      throw ValueError("onnx_run: --data " + o.data + " needs arrays 'x' and 't' (np.savez(f, x=..., t=...))");
    xs.at(0) = arrays.at("x").astype(m.input_info().at(0).dtype);
    t = arrays.at("t");
    std::cout << "finetune data: " << o.data << ", x " << xs[0].shape().str() << ", t " << t.shape().str() << "\n";
  } else {
    // Random targets for the batch at hand: labels for an (N, C) output, else values.
    Tensor y;
    {
      auto g = no_grad();
      y = m.forward_multi(as_variables(xs)).at(0).data();
    }
    if (y.ndim() == 2) t = random::randint(0, y.shape()[1], {y.shape()[0]});
    else t = random::randn(y.shape(), y.dtype());
    std::cout << "finetune data: random, x " << xs[0].shape().str() << ", t " << t.shape().str() << "\n";
  }
  const bool labels = is_integer(t.dtype());
  if (!labels) t = t.astype(out.dtype);

  optimizers::SGD sgd(o.lr);
  sgd.setup(m);
  const VariableList inputs = as_variables(xs);
  double first = 0, last = 0;
  for (std::int64_t step = 1; step <= o.finetune; ++step) {
    const Variable y = m.forward_multi(inputs).at(0);
    Variable loss = labels ? F::softmax_cross_entropy(y, Variable(t)) : F::mean_squared_error(y, Variable(t));
    m.cleargrads();
    loss.backward();
    sgd.update();
    last = loss.data().astype(float64).item<double>();
    if (step == 1) first = last;
    std::printf("finetune step %lld: loss %.6f\n", static_cast<long long>(step), last);
  }
  std::printf("loss %.6f -> %.6f (%s, SGD lr %g)\n", first, last, labels ? "softmax cross entropy" : "mean squared error",
              o.lr);
  if (!o.save.empty()) {
    m.save_weights(o.save);
    std::cout << "saved the weights to " << o.save << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  if (!onnx::is_available()) throw NotImplementedError("this build of dezero has no dezero::onnx");
  random::seed(static_cast<std::uint64_t>(o.seed));

  onnx::OnnxModel m(o.model);
  std::cout << "model: " << o.model << "\n";
  describe(m);

  // Inference runs in test mode: BatchNorm with its running statistics, Dropout off.
  auto test = test_mode();
  std::vector<Tensor> xs;
  for (std::size_t i = 0; i < m.input_info().size(); ++i) {
    const onnx::ValueInfo& v = m.input_info()[i];
    std::string source;
    xs.push_back(make_input(v, i == 0 ? o.input : std::string(), o.batch, source));
    std::cout << "input " << v.name << ": " << source << " " << xs.back().shape().str() << " "
              << dtype_name(xs.back().dtype()) << "\n";
  }
  {
    auto g = no_grad();
    const VariableList ys = m.forward_multi(as_variables(xs));
    for (std::size_t i = 0; i < ys.size(); ++i) print_output(m.output_info().at(i), ys[i].data());
  }
  if (o.plan) run_planned(m, as_variables(xs));
  if (o.finetune > 0) finetune(m, o, xs);
  return 0;
} catch (const std::exception& e) {
  return example::report_error("onnx_run", e);
}
