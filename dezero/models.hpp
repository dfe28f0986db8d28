/// \file
/// The class dezero::Model (a Layer that can plot itself, step 45) and
/// dezero::models: Sequential, MLP, and the model zoo VGG16 and ResNet50/101/152 with
/// DeZero's parameter keys, so DeZero's published weight files load (DeZero models.py).
///
/// ```cpp
/// dezero::models::MLP model({10, 1});                       // l0 = Linear(10), l1 = Linear(1)
/// dezero::models::Sequential seq{std::make_shared<L::Linear>(10), F::sigmoid,
///                                std::make_shared<L::Linear>(1)};
/// dezero::models::VGG16 vgg(true);                          // downloads vgg16.npz once
/// dezero::models::ResNet50 resnet;                          // random weights
/// ```
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
/// A Layer that can plot itself (step 45): the base of DeZero's models.
///
/// Derive from it as from L::Layer (override forward, register the sub-layers); every
/// class of dezero::models is one.
class Model : public L::Layer {
 public:
  /// Runs forward on the inputs and writes the graph of the output.
  ///
  /// With utils::plot_dot_graph(y, verbose = true, to_file); returns the path written
  /// (the image, or the .dot file when Graphviz is missing). With several outputs the
  /// first is plotted. A forward with no output is a ValueError; a file that cannot be
  /// written is an IOError.
  ///@{
  std::string plot(const Variable& x, const std::string& to_file = "model.png");
  std::string plot(const VariableList& xs, const std::string& to_file = "model.png");
  ///@}
};

/// dezero::models: ready-made models (DeZero's dezero.models).
///
/// models::Sequential and models::MLP (step 45), and the model zoo with DeZero's
/// parameter keys, so that DeZero's published weight files load: models::VGG16 and
/// models::ResNet50 / ResNet101 / ResNet152 (with their blocks BottleneckA, BottleneckB
/// and BuildingBlock). `pretrained = true` downloads the weight file once into
/// utils::cache_dir() (see pretrained_weights()).
namespace models {

/// An activation function: a callable from Variable to Variable (F::sigmoid, F::relu, a lambda).
using Activation = std::function<Variable(const Variable&)>;

// --- Sequential ----------------------------------------------------------------------------------
/// A model that applies its items (layers and plain functions) in order (DeZero's Sequential).
///
/// Applies its items in order. A Layer item is registered as `"l<i>"` (i = its position,
/// so the weight keys match DeZero's); a plain callable (F::relu, a lambda) is not a
/// layer and has no parameters.
class Sequential : public Model {
 public:
  /// One item of a Sequential: a layer (a std::shared_ptr to any L::Layer) or a plain callable.
  ///
  /// The callable takes and returns a Variable: F::relu, a lambda, an Activation.
  class Item {
   public:
    /// An item from a layer or from a callable (implicit, so that a braced list mixes both).
    ///
    /// A null layer or an empty std::function makes an item that Sequential::append refuses.
    ///@{
    template <class T, std::enable_if_t<std::is_base_of_v<L::Layer, T>, int> = 0>
    Item(std::shared_ptr<T> layer) : layer_(std::move(layer)) {}  // NOLINT implicit
    template <class Fn, std::enable_if_t<std::is_invocable_r_v<Variable, Fn&, const Variable&> &&
                                             !std::is_same_v<std::decay_t<Fn>, Item>, int> = 0>
    Item(Fn&& fn) : fn_(std::forward<Fn>(fn)) {}  // NOLINT implicit
    ///@}

   private:
    friend class Sequential;
    std::shared_ptr<L::Layer> layer_;
    Activation fn_;
  };

  /// An empty Sequential (forward returns x); add items with append().
  Sequential() = default;
  /// Appends each item in order, as append() does: `Sequential{layer, F::relu, layer2}`.
  Sequential(std::initializer_list<Item> items);
  /// Adds an item at the end; a layer is registered as `"l<i>"`, i = its position among all the items.
  ///
  /// An item that is neither a layer nor a callable (a null std::shared_ptr, an empty
  /// std::function) is a ValueError.
  void append(const Item& item);
  /// Applies the items in order: x -> item 0 -> item 1 -> ...; the shapes are the items'.
  Variable forward(const Variable& x) override;
  /// The number of items, layers and callables together.
  std::size_t size() const { return items_.size(); }

 private:
  std::vector<Item> items_;
};

// --- MLP (step 45) -------------------------------------------------------------------------------
/// The multi-layer perceptron (step 45): Linear layers with an activation between them.
///
/// One Linear(out) per size (l0, l1, ...); `activation` after every one but the last.
/// The weights are drawn from `gen` (dezero::random's global stream by default).
class MLP : public Model {
 public:
  /// Makes one float32 Linear(fc_output_sizes[i]) per size, named "l0", "l1", ... in order.
  ///
  /// Each takes its input size from the first call (DeZero's in_size=None).
  /// An empty fc_output_sizes or an empty activation is a ValueError, and so is a size
  /// that is not positive (from L::Linear).
  explicit MLP(const std::vector<std::int64_t>& fc_output_sizes, Activation activation = F::sigmoid,
               random::Generator gen = random::Generator::global());
  /// x: (N, in) -> (N, fc_output_sizes.back()); in is taken from the first call.
  Variable forward(const Variable& x) override;

  std::vector<L::LayerRef<L::Linear>> layers;  ///< The Linear layers l0, l1, ..., in order.
  Activation activation;  ///< Applied after every layer but the last.
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

/// Named activations returned by VGG16::extract, by layer name.
using VariableMap = std::map<std::string, Variable>;

/// The base URL of the weight files: $DEZERO_MODELS_MIRROR when set, else DeZero's release.
///
/// A '/' is added when $DEZERO_MODELS_MIRROR lacks one; DeZero's release is
/// https://github.com/koki0702/dezero-models/releases/download/v0.1/.
std::string models_mirror();
/// The path of a cached weight file, downloaded first when absent.
///
/// cache_dir()/file_name, from models_mirror() + file_name. `model` names the caller in
/// the error message. A failed download (or no cache folder) is an IOError that names
/// the file, the URL and the folder to put it in.
std::string pretrained_weights(const std::string& model, const std::string& file_name);

// --- VGG16 ---------------------------------------------------------------------------------------
/// The 16-layer VGG (step 58) with DeZero's parameter keys, so that DeZero's vgg16.npz loads.
///
/// 13 Conv2d 3x3 s1 p1 (conv1_1 .. conv5_3: 64, 64 | 128, 128 | 256 x3 | 512 x3 | 512 x3), each
/// followed by ReLU, max pooling(2, 2) after each block, reshape (N, -1), fc6 and fc7 (Linear
/// 4096, ReLU, dropout), fc8 (Linear 1000). x: (N, 3, 224, 224) -> (N, 1000) logits; fc6
/// takes 512 * 7 * 7 = 25088 inputs, so forward needs 224 x 224 images (extract up to pool5
/// takes any size). Keys "conv1_1/W" (64, 3, 3, 3), "conv1_1/b" (64,) ... "fc6/W" (25088,
/// 4096) ... "fc8/b" (1000,): 16 layers, 32 parameters, 138,357,544 values.
class VGG16 : public Model {
 public:
  /// The pooling that extract() puts after each block: max (as forward does) or average.
  ///
  /// Pooling::average is DeZero's examples/style_transfer.py.
  enum class Pooling { max, average };

  /// Makes the model with every parameter created now: random weights, or DeZero's with `pretrained`.
  ///
  /// The random weights are drawn from dezero::random's global stream in DeZero's order,
  /// so a seed gives the same model. pretrained = true: vgg16.npz is taken from the cache
  /// folder utils::cache_dir(), downloaded there first (see pretrained_weights(); a failed
  /// download is an IOError, before anything is allocated), then loaded with
  /// load_weights (a corrupt or mismatched file throws).
  explicit VGG16(bool pretrained = false);
  /// x: (N, 3, 224, 224) BGR images (preprocess()) -> (N, 1000) logits.
  ///
  /// Dropout after fc6 and fc7 is on in train mode (dezero::test_mode() turns it off). An
  /// x that is not (N, 3, H, W), or whose H and W do not reach fc6 as (N, 512, 7, 7), is
  /// a ShapeError.
  Variable forward(const Variable& x) override;

  /// The activations of the named layers, computed up to the last one asked for.
  ///
  /// "conv1_1" .. "conv5_3" (after ReLU), "pool1" .. "pool5", "fc6", "fc7" (after ReLU,
  /// before dropout), "fc8" (the logits). Pooling::average replaces every max pooling by
  /// average pooling (DeZero's examples/style_transfer.py). An unknown name is a ValueError.
  /// Grad-CAM wants the conv5_3 activation with a gradient: extract it together with "fc8"
  /// and call backward on a logit (or read conv5_3->outputs() after forward, as DeZero does).
  /// x is (N, 3, H, W) (else a ShapeError); layers up to pool5 take any H and W, fc6 and
  /// later need 224 x 224 as forward does. No names: an empty map.
  VariableMap extract(const Variable& x, const std::vector<std::string>& layers, Pooling pooling = Pooling::max);

  /// DeZero's VGG16.preprocess: an (H, W, 3) RGB image in 0..255 -> the (3, height, width) float32 BGR input.
  ///
  /// image (H, W, 3) float32 RGB in 0..255 (utils::load_image)
  /// -> (3, height, width) float32: bicubic resize to size = {height, width} (note: PIL's
  /// Image.resize takes (width, height); DeZero's default (224, 224) is square, so both
  /// read the same), RGB -> BGR, minus the BGR means [103.939, 116.779, 123.68], HWC -> CHW.
  /// A (H, W, 4) image drops its alpha channel, a (H, W) or (H, W, 1) one is repeated to RGB
  /// (PIL's convert('RGB')). The result is on the CPU; add the batch axis with
  /// `reshape({1, 3, height, width})`. An empty image or a size that is not positive is a
  /// ValueError, an image of another shape a ShapeError.
  static Tensor preprocess(const Tensor& image, Pair size = {224, 224});

  /// The name of the weight file, "vgg16.npz".
  static const char* weights_file() { return "vgg16.npz"; }

  /// The 13 convolutions, block by block: W (out, in, 3, 3) and b (out,) each.
  ///@{
  L::LayerRef<L::Conv2d> conv1_1, conv1_2, conv2_1, conv2_2, conv3_1, conv3_2, conv3_3, conv4_1, conv4_2, conv4_3,
      conv5_1, conv5_2, conv5_3;
  ///@}
  /// The fully connected layers: fc6 (25088 -> 4096), fc7 (4096 -> 4096), fc8 (4096 -> 1000).
  ///@{
  L::LayerRef<L::Linear> fc6, fc7, fc8;
  ///@}
};

// --- ResNet (Chainer's ResNet as DeZero ported it) -----------------------------------------------
/// ResNet's bottleneck block with a projection shortcut, the first block of a BuildingBlock.
///
/// BottleneckA(in, mid, out, stride = 2, downsample_fb = false), x: (N, in, H, W) -> (N, out,
/// H', W') with H' = (H - 1) / stride + 1 (H / stride for an even H), W' likewise: main
/// path conv1 1x1 (stride, unless downsample_fb) -> bn1 -> ReLU ->
/// conv2 3x3 p1 (stride when downsample_fb) -> bn2 -> ReLU -> conv3 1x1 -> bn3; shortcut conv4
/// 1x1 (stride) -> bn4; relu(main + shortcut). Convolutions have no bias.
class BottleneckA : public L::Layer {
 public:
  /// Makes the block with every parameter created now (float32; BatchNorms over mid or out channels).
  ///
  /// downsample_fb puts the stride on the 3x3 convolution (Facebook's ResNet) instead of
  /// the first 1x1 (MSRA's). Channels or a stride that are not positive are a ValueError.
  BottleneckA(std::int64_t in_channels, std::int64_t mid_channels, std::int64_t out_channels, int stride = 2,
              bool downsample_fb = false);
  /// x: (N, in, H, W) -> (N, out, (H - 1) / stride + 1, (W - 1) / stride + 1).
  Variable forward(const Variable& x) override;
  /// The convolutions: conv1, conv2 and conv3 on the main path, conv4 the projection shortcut.
  ///@{
  L::LayerRef<L::Conv2d> conv1, conv2, conv3, conv4;
  ///@}
  /// The batch normalisations: bn1 after conv1, bn2 after conv2, and so on.
  ///@{
  L::LayerRef<L::BatchNorm> bn1, bn2, bn3, bn4;
  ///@}
};

/// ResNet's bottleneck block with the identity shortcut, the later blocks of a BuildingBlock.
///
/// BottleneckB(in, mid), x: (N, in, H, W) -> same shape: conv1 1x1 -> bn1 -> ReLU -> conv2 3x3 p1
/// -> bn2 -> ReLU -> conv3 1x1 (back to `in` channels) -> bn3; relu(h + x).
class BottleneckB : public L::Layer {
 public:
  /// Makes the block with every parameter created now (float32); channels that are not positive are a ValueError.
  BottleneckB(std::int64_t in_channels, std::int64_t mid_channels);
  /// x: (N, in, H, W) -> the same shape.
  Variable forward(const Variable& x) override;
  /// The convolutions conv1 (1x1), conv2 (3x3 p1) and conv3 (1x1).
  ///@{
  L::LayerRef<L::Conv2d> conv1, conv2, conv3;
  ///@}
  /// The batch normalisations: bn1 after conv1, bn2 after conv2, and so on.
  ///@{
  L::LayerRef<L::BatchNorm> bn1, bn2, bn3;
  ///@}
};

/// One stage of a ResNet: a BottleneckA, then n_layers - 1 BottleneckBs.
///
/// BuildingBlock: `a` = BottleneckA(in, mid, out, stride, downsample_fb), then b1 .. b{n - 1}
/// = BottleneckB(out, mid), applied in that order. n_layers < 1 is a ValueError (and so
/// are the blocks' own errors).
class BuildingBlock : public L::Layer {
 public:
  /// Makes the stage ("a", "b1", ..., "b{n_layers - 1}") with every parameter created now.
  BuildingBlock(int n_layers, std::int64_t in_channels, std::int64_t mid_channels, std::int64_t out_channels,
                int stride, bool downsample_fb = false);
  /// x: (N, in, H, W) -> (N, out, (H - 1) / stride + 1, (W - 1) / stride + 1).
  Variable forward(const Variable& x) override;
  L::LayerRef<BottleneckA> a;  ///< The first block, "a".
  std::vector<L::LayerRef<BottleneckB>> b;  ///< The later blocks; b[0] is "b1".
};

/// ResNet (Chainer's ResNet as DeZero ported it) of 50, 101 or 152 layers, with DeZero's parameter keys.
///
/// ResNet(n_layers): conv1 = Conv2d(64, 7, stride 2, pad 3) with bias -> bn1 -> ReLU -> max
/// pooling(3, stride 2) -> res2 .. res5 (BuildingBlocks (in, mid, out, stride) = (64, 64, 256, 1),
/// (256, 128, 512, 2), (512, 256, 1024, 2), (1024, 512, 2048, 2)) -> global average pooling over
/// (H, W) -> fc6 = Linear(1000). Blocks per stage: 50 -> [3, 4, 6, 3], 101 -> [3, 4, 23, 3],
/// 152 -> [3, 8, 36, 3]; any other n_layers is a ValueError. x: (N, 3, H, W) with H, W >= 5
/// -> (N, 1000). Keys "conv1/W", "bn1/gamma", "res2/a/conv1/W", "res2/a/bn4/avg_var",
/// "res3/b3/bn2/gamma", "fc6/W" (2048, 1000), ...; weights `resnet<n_layers>.npz`.
class ResNet : public Model {
 public:
  /// Makes the model with every parameter created now: random weights, or DeZero's with `pretrained`.
  ///
  /// An n_layers other than 50, 101 or 152 is a ValueError. The random weights are drawn
  /// from dezero::random's global stream in DeZero's order, so a seed gives the same
  /// model. pretrained = true:
  /// `resnet<n_layers>.npz` is taken from the cache folder utils::cache_dir(), downloaded
  /// there first (see pretrained_weights(); a failed download is an IOError, before
  /// anything is allocated), then loaded with load_weights (a corrupt or mismatched file
  /// throws).
  explicit ResNet(int n_layers = 152, bool pretrained = false);
  /// x: (N, 3, H, W) with H, W >= 5 -> (N, 1000) logits (224 x 224 for the pretrained weights).
  ///
  /// An x of another shape is a ShapeError. BatchNorm uses the batch statistics in train
  /// mode; run inference under dezero::test_mode().
  Variable forward(const Variable& x) override;

  /// The name of the weight file, `"resnet<n_layers>.npz"`.
  static std::string weights_file(int n_layers) { return "resnet" + std::to_string(n_layers) + ".npz"; }

  int n_layers;  ///< 50, 101 or 152.
  L::LayerRef<L::Conv2d> conv1;  ///< The first convolution, 7x7 stride 2 pad 3, 3 -> 64 channels, with bias.
  L::LayerRef<L::BatchNorm> bn1;  ///< The batch normalisation after conv1.
  /// The four stages: res2 (-> 256 channels), res3 (512), res4 (1024), res5 (2048).
  ///@{
  L::LayerRef<BuildingBlock> res2, res3, res4, res5;
  ///@}
  L::LayerRef<L::Linear> fc6;  ///< The classifier, Linear(2048 -> 1000).
};

/// ResNet(50, pretrained): DeZero's ResNet50 (weights resnet50.npz).
class ResNet50 : public ResNet {
 public:
  /// Makes ResNet(50, pretrained); see ResNet::ResNet.
  explicit ResNet50(bool pretrained = false) : ResNet(50, pretrained) {}
};
/// ResNet(101, pretrained): DeZero's ResNet101 (weights resnet101.npz).
class ResNet101 : public ResNet {
 public:
  /// Makes ResNet(101, pretrained); see ResNet::ResNet.
  explicit ResNet101(bool pretrained = false) : ResNet(101, pretrained) {}
};
/// ResNet(152, pretrained): DeZero's ResNet152 (weights resnet152.npz).
class ResNet152 : public ResNet {
 public:
  /// Makes ResNet(152, pretrained); see ResNet::ResNet.
  explicit ResNet152(bool pretrained = false) : ResNet(152, pretrained) {}
};

}  // namespace models
}  // namespace dezero
