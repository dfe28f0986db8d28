// examples/step58.cpp - step 58: a pretrained VGG16 classifies a picture.
//
// The book:
//   img = Image.open(dezero.utils.get_file(url))     # zebra.jpg
//   x = VGG16.preprocess(img)[np.newaxis]            # (1, 3, 224, 224) float32
//   model = VGG16(pretrained=True)
//   with dezero.test_mode():
//       y = model(x)                                 # (1, 1000)
//   predict_id = np.argmax(y.data)
//   model.plot(x, to_file='vgg.pdf')
//   labels = ImageNet.labels()
//   print(labels[predict_id])
// Here: the top 5 classes with their softmax probabilities, and the graph as vgg.png
// (vgg.dot when Graphviz is missing). With DeZero's weights the book's zebra.jpg gives
// "zebra" first. Options: see common/vgg_files.hpp, and --plot FILE (default vgg.png).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <vector>

#include "common/report.hpp"
#include "common/vgg_files.hpp"

using namespace dezero;

int main(int argc, char** argv) try {
  vgg_files::Options o;
  std::string plot = "vgg.png";
  for (int i = 1; i < argc; ++i) {
    if (vgg_files::parse_common(o, argc, argv, i)) continue;
    const std::string a = argv[i];
    if (a == "--plot" && i + 1 < argc) plot = argv[++i];
    else throw ValueError("unknown option " + a + " (options: --image FILE, --pretrained FILE, --download, "
                          "--device cpu|cuda, --plot FILE)");
  }
  const Device dev = vgg_files::pick_device(o);
  const std::string path = vgg_files::picture(o, o.image, "zebra.jpg");
  const Tensor img = utils::load_image(path);  // (H, W, 3) RGB 0-255
  std::cout << "image: " << path << " " << img.shape().str() << "\n";
  Tensor x = models::VGG16::preprocess(img).reshape({1, 3, 224, 224});  // x[np.newaxis]

  random::seed(0);
  models::VGG16 model;
  vgg_files::load_weights(model, o);
  if (dev.is_cuda()) {
    model.to_gpu();
    x = x.to_gpu();
  }
  Variable y;
  {
    auto guard = test_mode();
    auto no_grad_guard = no_grad();
    y = model(x);  // (1, 1000)
  }
  const std::vector<double> p = F::softmax(y).data().to_cpu().astype(float64).to_vector<double>();
  std::vector<int> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + 5, order.end(), [&](int a, int b) { return p[a] > p[b]; });
  const auto labels = datasets::ImageNet::labels();
  std::cout << "predict_id: " << order[0] << "\n" << labels.at(order[0]) << "\n" << "top 5:\n";
  for (int k = 0; k < 5; ++k) std::printf("  %3d  %.4f  %s\n", order[k], p[order[k]], labels.at(order[k]).c_str());

  {
    auto guard = test_mode();
    std::cout << "graph: " << model.plot(x, plot) << "\n";
  }
  return 0;
} catch (const std::exception& e) {
  return example::report_error("step58", e);
}
