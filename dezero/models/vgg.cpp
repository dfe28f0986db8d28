// dezero/models/vgg.cpp - models::VGG16 (step 58; DeZero models.py): the 16-layer VGG
// with DeZero's parameter keys, its pretrained weights, named activations for Grad-CAM
// and style transfer, and the weight-file download shared with ResNet.
//
// Not here: image decoding and resampling (dezero/image.hpp, which preprocess calls), the examples.
#include <algorithm>
#include <array>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dezero/download.hpp"
#include "dezero/env.hpp"
#include "dezero/image.hpp"
#include "dezero/models.hpp"
#include "dezero/models/zoo_parts.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero::models {

// --- weight files --------------------------------------------------------------------------------
namespace {
constexpr const char* kDezeroModels = "https://github.com/koki0702/dezero-models/releases/download/v0.1/";
}  // namespace

std::string models_mirror() {
  const char* m = dezero::detail::env_value("DEZERO_MODELS_MIRROR");
  std::string base = m != nullptr ? std::string(m) : std::string(kDezeroModels);
  if (base.back() != '/') base += '/';
  return base;
}

// No SHA-256 is checked here: DeZero's weight files (koki0702/dezero-models' release v0.1) come
// with no published checksum, and none could be found that we could trust, so none is made up.
// They are fetched over https into the checked cache folder, and load_npz's checks and size cap
// (utils::set_max_npz_bytes) apply to what they hold.
std::string pretrained_weights(const std::string& model, const std::string& file_name) {
  const std::string url = models_mirror() + file_name;
  std::string dir;
  try {
    dir = utils::cache_dir();
    utils::GetFileOptions opt;
    opt.allow_file_urls = true;  // a file:// DEZERO_MODELS_MIRROR is the user's own choice; the default is https
    return utils::get_file(url, file_name, "", opt);
  } catch (const IOError& e) {
    const std::string where = dir.empty() ? std::string("$DEZERO_HOME (or ~/.dezero)") : dir;
    throw IOError(model + "(pretrained = true): the weight file " + file_name + " is not in " + where +
                  " and could not be downloaded from " + url + " (" + e.what() + "); hint: download " + url +
                  " yourself and put it at " + where + "/" + file_name +
                  ", or set DEZERO_MODELS_MIRROR to a base URL that holds " + file_name);
  }
}

// --- the layers, drawn or zero-filled (zoo_parts.hpp) ----------------------------------------------
namespace detail {

std::shared_ptr<L::Conv2d> make_conv(std::int64_t in, std::int64_t out, int k, int stride, int pad, bool nobias,
                                     bool draw) {
  if (draw) return std::make_shared<L::Conv2d>(out, k, stride, pad, nobias, float32, in);
  auto c = std::make_shared<L::Conv2d>(out, k, stride, pad, nobias, float32, 0);  // lazy: nothing drawn
  c->in_channels = in;
  c->W.set_data(zeros({out, in, k, k}, float32));
  return c;
}

std::shared_ptr<L::Linear> make_linear(std::int64_t in, std::int64_t out, bool draw) {
  if (draw) return std::make_shared<L::Linear>(out, false, float32, in);
  auto l = std::make_shared<L::Linear>(out, false, float32, 0);
  l->in_size = in;
  l->W.set_data(zeros({in, out}, float32));
  return l;
}

}  // namespace detail

// --- VGG16 ---------------------------------------------------------------------------------------
namespace {

struct ConvSpec {
  const char* name;
  std::int64_t in, out;
};
// The 13 convolutions, block by block (a pooling follows conv1_2, conv2_2, conv3_3, conv4_3, conv5_3).
constexpr std::array<ConvSpec, 13> kConvs{{{"conv1_1", 3, 64},    {"conv1_2", 64, 64},   {"conv2_1", 64, 128},
                                           {"conv2_2", 128, 128}, {"conv3_1", 128, 256}, {"conv3_2", 256, 256},
                                           {"conv3_3", 256, 256}, {"conv4_1", 256, 512}, {"conv4_2", 512, 512},
                                           {"conv4_3", 512, 512}, {"conv5_1", 512, 512}, {"conv5_2", 512, 512},
                                           {"conv5_3", 512, 512}}};
constexpr std::array<std::size_t, 5> kBlockEnds{1, 3, 6, 9, 12};  // indices into kConvs

// Every name extract() knows, in the order forward computes them.
std::vector<std::string> vgg_layer_names() {
  std::vector<std::string> names;
  std::size_t block = 0;
  for (std::size_t i = 0; i < kConvs.size(); ++i) {
    names.emplace_back(kConvs[i].name);
    if (i == kBlockEnds[block]) names.push_back("pool" + std::to_string(++block));
  }
  for (const char* fc : {"fc6", "fc7", "fc8"}) names.emplace_back(fc);
  return names;
}

std::array<L::LayerRef<L::Conv2d>*, 13> conv_layers(VGG16& m) {
  return {&m.conv1_1, &m.conv1_2, &m.conv2_1, &m.conv2_2, &m.conv3_1, &m.conv3_2, &m.conv3_3,
          &m.conv4_1, &m.conv4_2, &m.conv4_3, &m.conv5_1, &m.conv5_2, &m.conv5_3};
}

// x: (N, 3, H, W) images.
void check_input(const char* op, const Variable& x) {
  if (x.ndim() != 4 || x.shape()[1] != 3)
    dezero::detail::fail<ShapeError>(op, "input of shape ", x.shape(),
                             "; hint: pass (N, 3, H, W) BGR images, e.g. VGG16::preprocess(image) with a batch axis");
}

// pool5's output (N, 512, h, w) must flatten to fc6's 25088 = 512 * 7 * 7 inputs.
void check_fc6_input(const char* op, const Variable& h, const Variable& x) {
  if (h.shape()[1] * h.shape()[2] * h.shape()[3] != 512 * 7 * 7)
    dezero::detail::fail<ShapeError>(op, "an input of shape ", x.shape(), " reaches fc6 as ", h.shape(),
                                     ", but fc6 takes (N, 512, 7, 7)",
                                     dezero::detail::Hint{"feed 224 x 224 images (VGG16::preprocess), or stop at "
                                                          "pool5 with extract()"});
}

}  // namespace

VGG16::VGG16(bool pretrained) {
  // The file first: a missing one fails before 138M weights are allocated.
  const std::string file = pretrained ? pretrained_weights("VGG16", weights_file()) : std::string();
  const bool draw = !pretrained;
  // Conv2d(out, 3, stride 1, pad 1) over `in` channels: W (out, in, 3, 3), b (out,).
  auto convs = conv_layers(*this);
  for (std::size_t i = 0; i < kConvs.size(); ++i)
    *convs[i] = register_layer(kConvs[i].name, detail::make_conv(kConvs[i].in, kConvs[i].out, 3, 1, 1, false, draw));
  fc6 = register_layer("fc6", detail::make_linear(512 * 7 * 7, 4096, draw));  // W: (25088, 4096)
  fc7 = register_layer("fc7", detail::make_linear(4096, 4096, draw));
  fc8 = register_layer("fc8", detail::make_linear(4096, 1000, draw));
  if (pretrained) load_weights(file);
}

VariableMap VGG16::extract(const Variable& x, const std::vector<std::string>& layers, Pooling pooling) {
  static const std::vector<std::string> known = vgg_layer_names();
  // Find the last layer asked for; forward stops there.
  std::size_t last = 0;
  for (const auto& name : layers) {
    auto it = std::find(known.begin(), known.end(), name);
    if (it == known.end()) {
      std::string all;
      for (const auto& k : known) all += (all.empty() ? "" : " ") + k;
      dezero::detail::fail<ValueError>("VGG16::extract", "no layer named '", name, "'; hint: the names are ", all);
    }
    last = std::max(last, static_cast<std::size_t>(it - known.begin()) + 1);
  }
  VariableMap out;
  if (layers.empty()) return out;

  std::size_t step = 0;  // how many of `known` have been computed
  bool done = false;
  auto keep = [&](const Variable& h) {
    const std::string& name = known[step++];
    if (std::find(layers.begin(), layers.end(), name) != layers.end()) out[name] = h;
    done = step >= last;
  };
  auto convs = conv_layers(*this);
  check_input("VGG16::extract", x);
  // x: (N, 3, H, W) -> block k halves H and W: (N, 512, H / 32, W / 32) after pool5.
  Variable h = x;
  std::size_t block = 0;
  for (std::size_t i = 0; i < convs.size() && !done; ++i) {
    h = F::relu((*convs[i])(h));
    keep(h);
    if (!done && i == kBlockEnds[block]) {
      ++block;
      h = pooling == Pooling::max ? F::pooling(h, 2, 2) : F::average_pooling(h, 2, 2);
      keep(h);
    }
  }
  if (done) return out;
  check_fc6_input("VGG16::extract", h, x);
  // (N, 512, 7, 7) -> (N, 25088) -> fc6 (N, 4096) -> fc7 (N, 4096) -> fc8 (N, 1000)
  h = F::reshape(h, {h.shape()[0], -1});
  h = F::relu(fc6(h));
  keep(h);
  if (done) return out;
  h = F::relu(fc7(F::dropout(h)));
  keep(h);
  if (done) return out;
  h = fc8(F::dropout(h));
  keep(h);
  return out;
}

Variable VGG16::forward(const Variable& x) {
  // DeZero's forward, written out: conv blocks with ReLU and max pooling(2, 2),
  // then x = dropout(relu(fc6(x))), x = dropout(relu(fc7(x))), fc8(x).
  auto convs = conv_layers(*this);
  check_input("VGG16", x);
  Variable h = x;
  std::size_t block = 0;
  for (std::size_t i = 0; i < convs.size(); ++i) {
    h = F::relu((*convs[i])(h));
    if (i == kBlockEnds[block]) {
      ++block;
      h = F::pooling(h, 2, 2);
    }
  }
  check_fc6_input("VGG16", h, x);
  h = F::reshape(h, {h.shape()[0], -1});  // (N, 512 * 7 * 7)
  h = F::dropout(F::relu(fc6(h)));
  h = F::dropout(F::relu(fc7(h)));
  return fc8(h);
}

// --- preprocess (step 58) ------------------------------------------------------------------------
// DeZero: image.convert('RGB'); image.resize(size); np.asarray(image, float32); image[:, :, ::-1];
// image -= [103.939, 116.779, 123.68]; image.transpose((2, 0, 1)).
Tensor VGG16::preprocess(const Tensor& image, Pair size) {
  if (!image.defined())
    dezero::detail::fail<ValueError>("VGG16::preprocess", "the image is empty; hint: utils::load_image(path)");
  if (size.h <= 0 || size.w <= 0)
    dezero::detail::fail<ValueError>("VGG16::preprocess", "size must be positive {height, width}, got ", size.str());
  Tensor img = image.to(Device::cpu()).astype(float32);
  if (img.ndim() == 2) img = img.reshape({img.shape()[0], img.shape()[1], 1});
  if (img.ndim() != 3 || (img.shape()[2] != 1 && img.shape()[2] != 3 && img.shape()[2] != 4))
    dezero::detail::fail<ShapeError>("VGG16::preprocess", "image of shape ", image.shape(),
                                     "; hint: pass (H, W, 3) RGB values 0-255, as utils::load_image returns them");
  const std::int64_t H = img.shape()[0], W = img.shape()[1];
  // convert('RGB'): gray is repeated, alpha dropped. (H, W, 3)
  if (img.shape()[2] == 1) img = broadcast_to(img, {H, W, 3});
  if (img.shape()[2] == 4) img = img[{Slice(), Slice(), Slice(0, 3)}];
  // resize: bicubic, as PIL's default (PIL would return a copy for the same size).
  if (H != size.h || W != size.w) img = utils::resize_image(img, size.h, size.w);
  // RGB -> BGR, minus the BGR means of the ImageNet training set, (H, W, 3) -> (3, H, W).
  img = img[{Slice(), Slice(), Slice(std::nullopt, std::nullopt, -1)}];
  img = img - array({103.939, 116.779, 123.68}, float32);
  return img.transpose({2, 0, 1});
}

}  // namespace dezero::models
