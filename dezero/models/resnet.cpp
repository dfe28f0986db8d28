// dezero/models/resnet.cpp - models::ResNet (50, 101, 152) with BuildingBlock, BottleneckA
// and BottleneckB, as DeZero's models.py ports Chainer's ResNet: the same attribute names,
// so the keys ("res2/a/conv1/W", "res3/b3/bn2/gamma", ...) match DeZero's weight files.
//
// Not here: the weight download (vgg.cpp's pretrained_weights, shared by both models).
#include <string>
#include <utility>
#include <vector>

#include "dezero/models.hpp"
#include "dezero/models/zoo_parts.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero::models {

namespace {

// Whether the layers being built draw their weights (false while ResNet(pretrained = true)
// builds: the file replaces them). The public Bottleneck/BuildingBlock constructors draw.
thread_local bool t_draw = true;
struct NoDraw {
  bool old = t_draw;
  explicit NoDraw(bool pretrained) { t_draw = t_draw && !pretrained; }
  ~NoDraw() { t_draw = old; }
  NoDraw(const NoDraw&) = delete;
  NoDraw& operator=(const NoDraw&) = delete;
};

// Conv2d(out, k, stride, pad) without bias unless asked: W (out, in, k, k).
std::shared_ptr<L::Conv2d> conv(std::int64_t in, std::int64_t out, int k, int stride, int pad, bool nobias = true) {
  return detail::make_conv(in, out, k, stride, pad, nobias, t_draw);
}

// BatchNorm() over C channels with its parameters created now, as the first call would:
// avg_mean = 0, avg_var = 1, gamma = 1, beta = 0, each (C,) float32.
std::shared_ptr<L::BatchNorm> batch_norm(std::int64_t C) {
  auto bn = std::make_shared<L::BatchNorm>();
  bn->avg_mean.set_data(zeros({C}, float32));
  bn->avg_var.set_data(ones({C}, float32));
  bn->gamma.set_data(ones({C}, float32));
  bn->beta.set_data(zeros({C}, float32));
  return bn;
}

void check_channels(const char* layer, std::int64_t in, std::int64_t mid, std::int64_t out) {
  if (in <= 0 || mid <= 0 || out <= 0)
    dezero::detail::fail<ValueError>(layer, "channels must be positive, got in ", in, ", mid ", mid, ", out ", out);
}

}  // namespace

// --- BottleneckA ---------------------------------------------------------------------------------
BottleneckA::BottleneckA(std::int64_t in, std::int64_t mid, std::int64_t out, int stride, bool downsample_fb) {
  check_channels("BottleneckA", in, mid, out);
  if (stride <= 0) dezero::detail::fail<ValueError>("BottleneckA", "stride must be positive, got ", stride);
  // The original MSRA ResNet strides on the first 1x1 convolution, Facebook's on the 3x3.
  const int stride_1x1 = downsample_fb ? 1 : stride, stride_3x3 = downsample_fb ? stride : 1;
  conv1 = register_layer("conv1", conv(in, mid, 1, stride_1x1, 0));
  bn1 = register_layer("bn1", batch_norm(mid));
  conv2 = register_layer("conv2", conv(mid, mid, 3, stride_3x3, 1));
  bn2 = register_layer("bn2", batch_norm(mid));
  conv3 = register_layer("conv3", conv(mid, out, 1, 1, 0));
  bn3 = register_layer("bn3", batch_norm(out));
  conv4 = register_layer("conv4", conv(in, out, 1, stride, 0));  // the projection shortcut
  bn4 = register_layer("bn4", batch_norm(out));
}

// x: (N, in, H, W) -> (N, out, H', W'), H' = (H - 1) / stride + 1
Variable BottleneckA::forward(const Variable& x) {
  Variable h1 = F::relu(bn1(conv1(x)));
  h1 = F::relu(bn2(conv2(h1)));
  h1 = bn3(conv3(h1));
  Variable h2 = bn4(conv4(x));
  return F::relu(h1 + h2);
}

// --- BottleneckB ---------------------------------------------------------------------------------
BottleneckB::BottleneckB(std::int64_t in, std::int64_t mid) {
  check_channels("BottleneckB", in, mid, in);
  conv1 = register_layer("conv1", conv(in, mid, 1, 1, 0));
  bn1 = register_layer("bn1", batch_norm(mid));
  conv2 = register_layer("conv2", conv(mid, mid, 3, 1, 1));
  bn2 = register_layer("bn2", batch_norm(mid));
  conv3 = register_layer("conv3", conv(mid, in, 1, 1, 0));
  bn3 = register_layer("bn3", batch_norm(in));
}

// x: (N, in, H, W) -> same shape (the identity shortcut)
Variable BottleneckB::forward(const Variable& x) {
  Variable h = F::relu(bn1(conv1(x)));
  h = F::relu(bn2(conv2(h)));
  h = bn3(conv3(h));
  return F::relu(h + x);
}

// --- BuildingBlock -------------------------------------------------------------------------------
BuildingBlock::BuildingBlock(int n_layers, std::int64_t in, std::int64_t mid, std::int64_t out, int stride,
                             bool downsample_fb) {
  if (n_layers < 1) dezero::detail::fail<ValueError>("BuildingBlock", "n_layers must be at least 1, got ", n_layers);
  a = register_layer("a", std::make_shared<BottleneckA>(in, mid, out, stride, downsample_fb));
  for (int i = 1; i < n_layers; ++i)
    b.push_back(register_layer("b" + std::to_string(i), std::make_shared<BottleneckB>(out, mid)));
}

Variable BuildingBlock::forward(const Variable& x) {
  Variable h = a(x);
  for (auto& block : b) h = block(h);
  return h;
}

// --- ResNet --------------------------------------------------------------------------------------
namespace {
std::vector<int> blocks_of(int n_layers) {
  switch (n_layers) {
    case 50: return {3, 4, 6, 3};
    case 101: return {3, 4, 23, 3};
    case 152: return {3, 8, 36, 3};
    default:
      dezero::detail::fail<ValueError>("ResNet", "n_layers must be 50, 101 or 152 (DeZero's weight files), got ",
                                       n_layers, "; hint: build other depths from BuildingBlock");
  }
}
}  // namespace

ResNet::ResNet(int n_layers_, bool pretrained) : n_layers(n_layers_) {
  const std::vector<int> block = blocks_of(n_layers);
  // The file first: a missing one fails before any weight is allocated.
  const std::string file =
      pretrained ? pretrained_weights("ResNet" + std::to_string(n_layers), weights_file(n_layers)) : std::string();
  NoDraw no_draw(pretrained);
  conv1 = register_layer("conv1", conv(3, 64, 7, 2, 3, false));  // with bias, as in DeZero
  bn1 = register_layer("bn1", batch_norm(64));
  res2 = register_layer("res2", std::make_shared<BuildingBlock>(block[0], 64, 64, 256, 1));
  res3 = register_layer("res3", std::make_shared<BuildingBlock>(block[1], 256, 128, 512, 2));
  res4 = register_layer("res4", std::make_shared<BuildingBlock>(block[2], 512, 256, 1024, 2));
  res5 = register_layer("res5", std::make_shared<BuildingBlock>(block[3], 1024, 512, 2048, 2));
  fc6 = register_layer("fc6", detail::make_linear(2048, 1000, t_draw));
  if (pretrained) load_weights(file);
}

// x: (N, 3, 224, 224) -> conv1 (N, 64, 112, 112) -> pool (N, 64, 55, 55) -> res2 (N, 256, 55, 55)
// -> res3 (N, 512, 28, 28) -> res4 (N, 1024, 14, 14) -> res5 (N, 2048, 7, 7) -> (N, 2048) -> (N, 1000)
Variable ResNet::forward(const Variable& x) {
  if (x.ndim() != 4 || x.shape()[1] != 3 || x.shape()[2] < 5 || x.shape()[3] < 5)
    throw ShapeError("ResNet" + std::to_string(n_layers) + ": input of shape " + x.shape().str() +
                     "; hint: pass (N, 3, H, W) images with H, W >= 5 (224 for the pretrained weights)");
  Variable h = F::relu(bn1(conv1(x)));
  h = F::pooling(h, 3, 2);
  h = res5(res4(res3(res2(h))));
  // DeZero's _global_average_pooling_2d: average_pooling with kernel (H, W), then (N, C).
  const std::int64_t N = h.shape()[0], C = h.shape()[1];
  h = F::average_pooling(h, {static_cast<int>(h.shape()[2]), static_cast<int>(h.shape()[3])}, 1);
  h = F::reshape(h, {N, C});
  return fc6(h);
}

}  // namespace dezero::models
