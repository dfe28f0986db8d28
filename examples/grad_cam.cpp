// examples/grad_cam.cpp - Grad-CAM with VGG16 (DeZero's examples/grad_cam.py): where in
// the picture the predicted class's evidence lies.
//
//   y = model(x)                                   # (1, 1000)
//   A = conv5_3's output                           # (1, 512, 14, 14), kept with its gradient
//   y[0, predict_id].backward(retain_grad=True)
//   w = average(A.grad, axis=(0, 2, 3))            # (512,): one weight per channel
//   heat = relu(mean_c(w[c] * A[0, c]))            # (14, 14), then / max
//   heat -> resized to the picture, coloured (jet) -> 0.4 * heat + picture -> grad_cam.png
// DeZero reads conv5_3's output through the layer's `outputs` (before its ReLU); so do
// we (Layer::outputs()). Unlike DeZero we run in test mode: its dropout would make the
// map differ from run to run. Options: see common/vgg_files.hpp, and --out FILE
// (default grad_cam.png).
#include <algorithm>
#include <cmath>
#include <iostream>
#include <vector>

#include "common/report.hpp"
#include "common/vgg_files.hpp"

using namespace dezero;

namespace {

// OpenCV's COLORMAP_JET, v in [0, 1] -> (r, g, b) in [0, 255].
void jet(double v, double rgb[3]) {
  auto ramp = [](double x) { return std::clamp(1.5 - std::abs(x), 0.0, 1.0); };
  rgb[0] = 255.0 * ramp(4.0 * v - 3.0);
  rgb[1] = 255.0 * ramp(4.0 * v - 2.0);
  rgb[2] = 255.0 * ramp(4.0 * v - 1.0);
}

}  // namespace

int main(int argc, char** argv) try {
  vgg_files::Options o;
  std::string out = "grad_cam.png";
  for (int i = 1; i < argc; ++i) {
    if (vgg_files::parse_common(o, argc, argv, i)) continue;
    const std::string a = argv[i];
    if (a == "--out" && i + 1 < argc) out = argv[++i];
    else throw ValueError("unknown option " + a + " (options: --image FILE, --pretrained FILE, --download, "
                          "--device cpu|cuda, --out FILE)");
  }
  const Device dev = vgg_files::pick_device(o);
  const std::string path = vgg_files::picture(o, o.image, "zebra.jpg");
  const Tensor img = utils::load_image(path);  // (H, W, 3)
  const std::int64_t H = img.shape()[0], W = img.shape()[1];
  std::cout << "image: " << path << " " << img.shape().str() << "\n";

  random::seed(0);
  models::VGG16 model;
  vgg_files::load_weights(model, o);
  Tensor x = models::VGG16::preprocess(img).reshape({1, 3, 224, 224});
  if (dev.is_cuda()) {
    model.to_gpu();
    x = x.to_gpu();
  }
  auto guard = test_mode();
  Variable y = model(x);                              // (1, 1000)
  Variable conv = model.conv5_3->outputs().at(0);     // (1, 512, 14, 14)
  const std::int64_t predict_id = y.data().argmax().to_cpu().item<std::int64_t>();
  std::cout << "predict_id: " << predict_id << " (" << datasets::ImageNet::labels().at(static_cast<int>(predict_id))
            << ")\n";
  y[{Index(0), Index(predict_id)}].backward(/*retain_grad=*/true);

  const Tensor pooled = F::average(conv.grad(), {0, 2, 3}).data();              // (512,)
  Tensor heat = (conv.data()[Index(0)] * pooled.reshape({-1, 1, 1})).mean({0});  // (14, 14)
  heat = heat.to_cpu().astype(float64);
  std::vector<double> h = heat.to_vector<double>();
  double top = 0;
  for (double& v : h) top = std::max(top, v = std::max(v, 0.0));
  if (top > 0)
    for (double& v : h) v /= top;
  std::cout << "heat map: " << heat.shape().str() << ", max before scaling " << top << "\n";
  const std::int64_t hh = heat.shape()[0], hw = heat.shape()[1];
  const Tensor big = utils::resize_image(array(std::vector<float>(h.begin(), h.end()), Shape{hh, hw, 1}), H, W);

  // 0.4 * jet(heat) + picture, clipped to 0-255 by save_image.
  const std::vector<float> m = big.to_vector<float>(), pic = img.to_vector<float>();
  std::vector<float> blend(pic.size());
  for (std::size_t p = 0; p < m.size(); ++p) {
    double rgb[3];
    jet(std::clamp(static_cast<double>(m[p]), 0.0, 1.0), rgb);
    for (int c = 0; c < 3; ++c) blend[p * 3 + c] = static_cast<float>(0.4 * rgb[c] + pic[p * 3 + c]);
  }
  utils::save_image(out, array(blend, Shape{H, W, 3}), 1.0);
  std::cout << "wrote " << out << "\n";
  return 0;
} catch (const std::exception& e) {
  return example::report_error("grad_cam", e);
}
