// dezero/models.hpp - dezero::Model (a Layer that can plot itself, step 45) and
// dezero::models: Sequential, MLP, and the model zoo VGG16 and ResNet50/101/152 with
// DeZero's parameter keys, so DeZero's published weight files load (DeZero models.py).
//
//   dezero::models::MLP model({10, 1});                       // l0 = Linear(10), l1 = Linear(1)
//   dezero::models::Sequential seq{std::make_shared<L::Linear>(10), F::sigmoid,
//                                  std::make_shared<L::Linear>(1)};
//   dezero::models::VGG16 vgg(true);                          // downloads vgg16.npz once
//   dezero::models::ResNet50 resnet;                          // random weights
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "dezero/functions.hpp"
#include "dezero/layers.hpp"

namespace dezero {

// --- Model ---------------------------------------------------------------------------------------
class Model : public L::Layer {
 public:
  // Runs forward on the inputs and writes the graph of the output with
  // utils::plot_dot_graph(y, verbose = true, to_file); returns the path written.
  std::string plot(const Variable& x, const std::string& to_file = "model.png");
  std::string plot(const VariableList& xs, const std::string& to_file = "model.png");
};

namespace models {

using Activation = std::function<Variable(const Variable&)>;

// --- Sequential ----------------------------------------------------------------------------------
// Applies its items in order. A Layer item is registered as "l<i>" (i = its position,
// so the weight keys match DeZero's); a plain callable (F::relu, a lambda) is not a
// layer and has no parameters.
class Sequential : public Model {
 public:
  class Item {
   public:
    template <class T, std::enable_if_t<std::is_base_of_v<L::Layer, T>, int> = 0>
    Item(std::shared_ptr<T> layer) : layer_(std::move(layer)) {}  // NOLINT implicit
    template <class Fn, std::enable_if_t<std::is_invocable_r_v<Variable, Fn&, const Variable&> &&
                                             !std::is_same_v<std::decay_t<Fn>, Item>, int> = 0>
    Item(Fn&& fn) : fn_(std::forward<Fn>(fn)) {}  // NOLINT implicit

   private:
    friend class Sequential;
    std::shared_ptr<L::Layer> layer_;
    Activation fn_;
  };

  Sequential() = default;
  Sequential(std::initializer_list<Item> items);
  void append(const Item& item);
  Variable forward(const Variable& x) override;
  std::size_t size() const { return items_.size(); }

 private:
  std::vector<Item> items_;
};

// --- MLP (step 45) -------------------------------------------------------------------------------
// One Linear(out) per size (l0, l1, ...); `activation` after every one but the last.
// The weights are drawn from `gen` (dezero::random's global stream by default).
class MLP : public Model {
 public:
  explicit MLP(const std::vector<std::int64_t>& fc_output_sizes, Activation activation = F::sigmoid,
               random::Generator gen = random::Generator::global());
  Variable forward(const Variable& x) override;

  std::vector<L::LayerRef<L::Linear>> layers;
  Activation activation;
};

// --- the model zoo: VGG16 and ResNet (step 58; DeZero models.py) ----------------------------
// Every parameter is created at construction with the shape of DeZero's weight file
// (DeZero creates W lazily on the first call; the random numbers are drawn in the same
// order, so a seed gives the same model), so params() shows the shapes and a fresh model
// loads a file whose shapes differ from its own only by throwing.
//
// pretrained = true: the weight file (vgg16.npz, resnet50.npz, ...) is taken from the cache
// folder utils::cache_dir() ($DEZERO_HOME, else ~/.dezero), downloaded there first with
// utils::get_file from DeZero's release https://github.com/koki0702/dezero-models/releases/download/v0.1/
// or from $DEZERO_MODELS_MIRROR (a base URL, e.g. file:///data/models/ or http://host/models/).
// A failed download is an IOError that names the file, the URL and the folder to put it
// in; then load_weights (a corrupt or mismatched file throws and changes nothing).

// Named activations returned by VGG16::extract, by layer name.
using VariableMap = std::map<std::string, Variable>;

// The base URL of the weight files: $DEZERO_MODELS_MIRROR when set (a '/' is added when it
// lacks one), else DeZero's release above.
std::string models_mirror();
// The path of a cached weight file, downloaded first when absent: cache_dir()/file_name,
// from models_mirror() + file_name. `model` names the caller in the error message.
std::string pretrained_weights(const std::string& model, const std::string& file_name);

// --- VGG16 ---------------------------------------------------------------------------------------
// 13 Conv2d 3x3 s1 p1 (conv1_1 .. conv5_3: 64, 64 | 128, 128 | 256 x3 | 512 x3 | 512 x3), each
// followed by ReLU, max pooling(2, 2) after each block, reshape (N, -1), fc6 and fc7 (Linear
// 4096, ReLU, dropout), fc8 (Linear 1000). x: (N, 3, 224, 224) -> (N, 1000) logits; fc6
// takes 512 * 7 * 7 = 25088 inputs, so forward needs 224 x 224 images (extract up to pool5
// takes any size). Keys "conv1_1/W" (64, 3, 3, 3), "conv1_1/b" (64,) ... "fc6/W" (25088,
// 4096) ... "fc8/b" (1000,): 16 layers, 32 parameters, 138,357,544 values.
class VGG16 : public Model {
 public:
  enum class Pooling { max, average };

  explicit VGG16(bool pretrained = false);
  Variable forward(const Variable& x) override;

  // The activations of the named layers, computed up to the last one asked for:
  // "conv1_1" .. "conv5_3" (after ReLU), "pool1" .. "pool5", "fc6", "fc7" (after ReLU,
  // before dropout), "fc8" (the logits). Pooling::average replaces every max pooling by
  // average pooling (DeZero's examples/style_transfer.py). An unknown name is a ValueError.
  // Grad-CAM wants the conv5_3 activation with a gradient: extract it together with "fc8"
  // and call backward on a logit (or read conv5_3->outputs() after forward, as DeZero does).
  VariableMap extract(const Variable& x, const std::vector<std::string>& layers, Pooling pooling = Pooling::max);

  // DeZero's VGG16.preprocess: image (H, W, 3) float32 RGB in 0..255 (utils::load_image)
  // -> (3, height, width) float32: bicubic resize to size = {height, width} (note: PIL's
  // Image.resize takes (width, height); DeZero's default (224, 224) is square, so both
  // read the same), RGB -> BGR, minus the BGR means [103.939, 116.779, 123.68], HWC -> CHW.
  // A (H, W, 4) image drops its alpha channel, a (H, W) or (H, W, 1) one is repeated to RGB
  // (PIL's convert('RGB')).
  static Tensor preprocess(const Tensor& image, Pair size = {224, 224});

  static const char* weights_file() { return "vgg16.npz"; }

  L::LayerRef<L::Conv2d> conv1_1, conv1_2, conv2_1, conv2_2, conv3_1, conv3_2, conv3_3, conv4_1, conv4_2, conv4_3,
      conv5_1, conv5_2, conv5_3;
  L::LayerRef<L::Linear> fc6, fc7, fc8;
};

// --- ResNet (Chainer's ResNet as DeZero ported it) -----------------------------------------------
// BottleneckA(in, mid, out, stride = 2, downsample_fb = false), x: (N, in, H, W) -> (N, out,
// H / stride, W / stride): main path conv1 1x1 (stride, unless downsample_fb) -> bn1 -> ReLU ->
// conv2 3x3 p1 (stride when downsample_fb) -> bn2 -> ReLU -> conv3 1x1 -> bn3; shortcut conv4
// 1x1 (stride) -> bn4; relu(main + shortcut). Convolutions have no bias.
class BottleneckA : public L::Layer {
 public:
  BottleneckA(std::int64_t in_channels, std::int64_t mid_channels, std::int64_t out_channels, int stride = 2,
              bool downsample_fb = false);
  Variable forward(const Variable& x) override;
  L::LayerRef<L::Conv2d> conv1, conv2, conv3, conv4;
  L::LayerRef<L::BatchNorm> bn1, bn2, bn3, bn4;
};

// BottleneckB(in, mid), x: (N, in, H, W) -> same shape: conv1 1x1 -> bn1 -> ReLU -> conv2 3x3 p1
// -> bn2 -> ReLU -> conv3 1x1 (back to `in` channels) -> bn3; relu(h + x).
class BottleneckB : public L::Layer {
 public:
  BottleneckB(std::int64_t in_channels, std::int64_t mid_channels);
  Variable forward(const Variable& x) override;
  L::LayerRef<L::Conv2d> conv1, conv2, conv3;
  L::LayerRef<L::BatchNorm> bn1, bn2, bn3;
};

// BuildingBlock: `a` = BottleneckA(in, mid, out, stride, downsample_fb), then b1 .. b{n - 1}
// = BottleneckB(out, mid), applied in that order. n_layers < 1 is a ValueError.
class BuildingBlock : public L::Layer {
 public:
  BuildingBlock(int n_layers, std::int64_t in_channels, std::int64_t mid_channels, std::int64_t out_channels,
                int stride, bool downsample_fb = false);
  Variable forward(const Variable& x) override;
  L::LayerRef<BottleneckA> a;
  std::vector<L::LayerRef<BottleneckB>> b;  // b[0] is "b1"
};

// ResNet(n_layers): conv1 = Conv2d(64, 7, stride 2, pad 3) with bias -> bn1 -> ReLU -> max
// pooling(3, stride 2) -> res2 .. res5 (BuildingBlocks (in, mid, out, stride) = (64, 64, 256, 1),
// (256, 128, 512, 2), (512, 256, 1024, 2), (1024, 512, 2048, 2)) -> global average pooling over
// (H, W) -> fc6 = Linear(1000). Blocks per stage: 50 -> [3, 4, 6, 3], 101 -> [3, 4, 23, 3],
// 152 -> [3, 8, 36, 3]; any other n_layers is a ValueError. x: (N, 3, H, W) with H, W >= 5
// -> (N, 1000). Keys "conv1/W", "bn1/gamma", "res2/a/conv1/W", "res2/a/bn4/avg_var",
// "res3/b3/bn2/gamma", "fc6/W" (2048, 1000), ...; weights resnet<n_layers>.npz.
class ResNet : public Model {
 public:
  explicit ResNet(int n_layers = 152, bool pretrained = false);
  Variable forward(const Variable& x) override;

  static std::string weights_file(int n_layers) { return "resnet" + std::to_string(n_layers) + ".npz"; }

  int n_layers;
  L::LayerRef<L::Conv2d> conv1;
  L::LayerRef<L::BatchNorm> bn1;
  L::LayerRef<BuildingBlock> res2, res3, res4, res5;
  L::LayerRef<L::Linear> fc6;
};

class ResNet50 : public ResNet {
 public:
  explicit ResNet50(bool pretrained = false) : ResNet(50, pretrained) {}
};
class ResNet101 : public ResNet {
 public:
  explicit ResNet101(bool pretrained = false) : ResNet(101, pretrained) {}
};
class ResNet152 : public ResNet {
 public:
  explicit ResNet152(bool pretrained = false) : ResNet(152, pretrained) {}
};

}  // namespace models
}  // namespace dezero
