// examples/style_transfer.cpp - neural style transfer with VGG16 (DeZero's
// examples/style_transfer.py, after Gatys et al.): a picture, a Parameter of shape
// (1, 3, S, S), is optimised so that its VGG16 features keep the content picture's
// conv5_2 activation and the style picture's Gram matrices.
//
//   features(x) = VGG16::extract(x, layers, Pooling::average)  (DeZero's extract uses average pooling)
//   content loss = 1e-4 * MSE(F_conv5_2(content), F_conv5_2(gen)) / 2
//   style loss   = sum over conv1_1, conv2_1, conv3_1, conv4_1, conv5_1 of
//                  1/5 * MSE(G(style), G(gen)) / (4 (C H W)^2),  G(F) = F F^T (C, C) per layer
//   variation    = 1e-6 * sum((x[:, :, :-1, :-1] - x[:, :, 1:, :-1])^2 + (x[:, :, :-1, :-1] - x[:, :, :-1, 1:])^2)
//   gen starts as uniform(-20, 20) noise; AdaGrad(lr 5.0); DeZero runs 5001 iterations (2001 here
//   by default, --iters) and shows the picture every 1000; we write it (--every).
// DeZero's loss loops over every extracted layer for the content term (its extract returns
// them all); we use the content layer it names, conv5_2. Options: see common/vgg_files.hpp,
// and --style FILE (default the book's style.jpg), --size S (default 224), --iters N,
// --every N, --out FILE (default style_transfer.png; numbered copies every --every iterations).
#include <cstdio>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "common/options.hpp"
#include "common/report.hpp"
#include "common/vgg_files.hpp"

using namespace dezero;

namespace {

const std::vector<std::string> kStyleLayers = {"conv1_1", "conv2_1", "conv3_1", "conv4_1", "conv5_1"};
const std::string kContentLayer = "conv5_2";
const double kContentWeight = 1e-4, kStyleWeight = 1.0, kVariationWeight = 1e-6;

// (1, C, H, W) -> (1, C, C)
Variable gram_mat(const Variable& x) {
  const std::int64_t C = x.shape()[1];
  Variable features = F::reshape(x, {C, -1});
  return F::reshape(F::matmul(features, features.T()), {1, C, C});
}

Variable style_loss(const Variable& style, const Variable& comb) {
  const Shape& s = style.shape();
  const double chw = static_cast<double>(s[1] * s[2] * s[3]);
  return F::mean_squared_error(gram_mat(style), gram_mat(comb)) / (4.0 * chw * chw);
}

Variable total_variation_loss(const Variable& x) {
  const Slice all, head(std::nullopt, -1), tail(1, std::nullopt);
  Variable a = F::pow(x[{all, all, head, head}] - x[{all, all, tail, head}], 2);
  Variable b = F::pow(x[{all, all, head, head}] - x[{all, all, head, tail}], 2);
  return F::sum(a + b);
}

// (1, 3, S, S) BGR minus the means -> (S, S, 3) RGB 0-255 (DeZero's deprocess_image).
Tensor deprocess(const Tensor& x) {
  const std::int64_t S = x.shape()[2];
  std::vector<float> v = x.to_cpu().to_vector<float>(), out(static_cast<std::size_t>(S * S * 3));
  const float mean[3] = {103.939f, 116.779f, 123.68f};
  for (std::int64_t c = 0; c < 3; ++c)
    for (std::int64_t p = 0; p < S * S; ++p)
      out[static_cast<std::size_t>(p * 3 + (2 - c))] = v[static_cast<std::size_t>(c * S * S + p)] + mean[c];
  return array(out, Shape{S, S, 3});
}

// DeZero's `gen_model = Model(); gen_model.param = gen_img`: a model whose only parameter
// is the picture, for the optimizer.
class Picture : public Model {
 public:
  explicit Picture(Parameter p) { param = register_parameter("param", std::move(p)); }
  Parameter param;
};

}  // namespace

int main(int argc, char** argv) try {
  vgg_files::Options o;
  std::string style_path, out = "style_transfer.png";
  int size = 224;
  int iters = 2001, every = 1000;
  for (int i = 1; i < argc; ++i) {
    if (vgg_files::parse_common(o, argc, argv, i)) continue;
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--style" && has_value) style_path = argv[++i];
    else if (a == "--size" && has_value) size = static_cast<int>(example::integer_option(a, argv[++i], 1));
    else if (a == "--iters" && has_value) iters = static_cast<int>(example::integer_option(a, argv[++i], 1));
    else if (a == "--every" && has_value) every = static_cast<int>(example::integer_option(a, argv[++i], 1));
    else if (a == "--out" && has_value) out = argv[++i];
    else throw ValueError("unknown option " + a + " (options: --image FILE, --style FILE, --pretrained FILE, "
                          "--download, --device cpu|cuda, --size S, --iters N, --every N, --out FILE)");
  }
  if (size < 32) throw ValueError("--size must be at least 32 (VGG16 pools five times), got " + std::to_string(size));
  const Device dev = vgg_files::pick_device(o);
  const std::string content_file = vgg_files::picture(o, o.image, "zebra.jpg");
  const std::string style_file = vgg_files::picture(o, style_path, "style.jpg", "--style");
  std::cout << "content: " << content_file << "\nstyle: " << style_file << "\n";

  random::seed(0);
  models::VGG16 model;
  vgg_files::load_weights(model, o);
  Tensor content = models::VGG16::preprocess(utils::load_image(content_file), {size, size}).reshape({1, 3, size, size});
  Tensor style = models::VGG16::preprocess(utils::load_image(style_file), {size, size}).reshape({1, 3, size, size});
  Picture gen_model(Parameter(random::uniform(-20.0, 20.0, Shape{1, 3, size, size}).astype(float32), "gen"));
  Parameter& gen = gen_model.param;
  if (dev.is_cuda()) {
    model.to_gpu();
    gen_model.to_gpu();
    content = content.to_gpu();
    style = style.to_gpu();
  }
  optimizers::AdaGrad optimizer(5.0);
  optimizer.setup(gen_model);

  std::vector<std::string> layers = kStyleLayers;
  layers.push_back(kContentLayer);
  models::VariableMap content_features, style_features;
  {
    auto guard = no_grad();
    content_features = model.extract(content, {kContentLayer}, models::VGG16::Pooling::average);
    style_features = model.extract(style, kStyleLayers, models::VGG16::Pooling::average);
  }
  for (int i = 0; i < iters; ++i) {
    model.cleargrads();
    gen_model.cleargrads();
    models::VariableMap g = model.extract(gen, layers, models::VGG16::Pooling::average);
    Variable loss = kContentWeight * F::mean_squared_error(content_features.at(kContentLayer), g.at(kContentLayer)) / 2.0;
    for (const std::string& l : kStyleLayers)
      loss = loss + kStyleWeight / kStyleLayers.size() * style_loss(style_features.at(l), g.at(l));
    loss = loss + kVariationWeight * total_variation_loss(gen);
    loss.backward();
    optimizer.update();
    if (i % 100 == 0 || i == iters - 1) {
      std::printf("%d loss: %.6g\n", i, loss.data().to_cpu().astype(float64).item<double>());
      std::fflush(stdout);
    }
    if ((every > 0 && i % every == 0 && i > 0) || i == iters - 1) {
      std::string file = out;
      if (i != iters - 1) {
        const auto dot = out.rfind('.');
        file = dot == std::string::npos ? out + "_" + std::to_string(i)
                                        : out.substr(0, dot) + "_" + std::to_string(i) + out.substr(dot);
      }
      utils::save_image(file, deprocess(gen.data()), 1.0);
      std::cout << "wrote " << file << "\n";
    }
  }
  return 0;
} catch (const std::exception& e) {
  return example::report_error("style_transfer", e);
}
