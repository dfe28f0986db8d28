// examples/gan.cpp - DeZero's DCGAN (examples/gan.py) on MNIST, or on Fashion-MNIST when
// the MNIST files are absent: a generator G turns noise z into 28x28 images, a
// discriminator D tells them from the training images, and each learns against the other.
//
//   G: z (N, 62) -> Linear(1024) -> BatchNorm -> ReLU -> Linear(128*7*7) -> BatchNorm -> ReLU
//        -> reshape (N, 128, 7, 7) -> Deconv2d(64, k4, s2, p1) -> BatchNorm -> ReLU  (N, 64, 14, 14)
//        -> Deconv2d(1, k4, s2, p1) -> sigmoid                                        (N, 1, 28, 28)
//   D: x (N, 1, 28, 28) -> Conv2d(64, k4, s2, p1) -> leaky_relu                      (N, 64, 14, 14)
//        -> Conv2d(128, k4, s2, p1) -> BatchNorm -> leaky_relu                        (N, 128, 7, 7)
//        -> flatten (N, 6272) -> Linear(1024) -> BatchNorm -> leaky_relu -> Linear(1) -> sigmoid (N, 1)
//
// As gan.py: latent 62, batch 128, 5 epochs, Adam(alpha 0.0002, beta1 0.5) for G and for D,
// binary_cross_entropy, images x / 255 as float32, every Linear / Conv2d / Deconv2d weight
// re-drawn from N(0, 0.02) after a dummy forward (batch 1) has created them, the last,
// incomplete batch skipped, and 25 images sampled from a fixed z in test mode after each
// epoch, written as a 5x5 grid: <out>/gan_epoch<k>.png.
//
// Options: see examples/common/generative.hpp (--epochs, --batch-size, --limit, --device,
// --out, --data, --dataset, --seed).
#include <dezero/image.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "common/generative.hpp"
#include "common/report.hpp"

using namespace dezero;

namespace {

constexpr std::int64_t kLatent = 62;                        // gan.py: hidden_size
constexpr std::int64_t kFcC = 128, kFcH = 7, kFcW = 7;      // gan.py: fc_channel, fc_height, fc_width

std::shared_ptr<models::Sequential> make_generator() {
  return std::make_shared<models::Sequential>(std::initializer_list<models::Sequential::Item>{
      std::make_shared<L::Linear>(1024),
      std::make_shared<L::BatchNorm>(),
      F::relu,
      std::make_shared<L::Linear>(kFcC * kFcH * kFcW),
      std::make_shared<L::BatchNorm>(),
      F::relu,
      [](const Variable& x) { return F::reshape(x, {-1, kFcC, kFcH, kFcW}); },
      std::make_shared<L::Deconv2d>(kFcC / 2, 4, 2, 1),
      std::make_shared<L::BatchNorm>(),
      F::relu,
      std::make_shared<L::Deconv2d>(1, 4, 2, 1),
      F::sigmoid,
  });
}

Variable leaky_relu(const Variable& x) { return F::leaky_relu(x); }  // DeZero's slope 0.2

std::shared_ptr<models::Sequential> make_discriminator() {
  return std::make_shared<models::Sequential>(std::initializer_list<models::Sequential::Item>{
      std::make_shared<L::Conv2d>(64, 4, 2, 1),
      leaky_relu,
      std::make_shared<L::Conv2d>(128, 4, 2, 1),
      std::make_shared<L::BatchNorm>(),
      leaky_relu,
      [](const Variable& x) { return F::flatten(x); },
      std::make_shared<L::Linear>(1024),
      std::make_shared<L::BatchNorm>(),
      leaky_relu,
      std::make_shared<L::Linear>(1),
      F::sigmoid,
  });
}

// gan.py's init_weight: a dummy forward (z ~ U[0, 1), batch 1) creates the lazy weights,
// then W = 0.02 * randn(W.shape) for every Conv2d, Linear and Deconv2d (biases and the
// BatchNorm parameters keep their initial values). Returns how many weights were redrawn.
int init_weight(models::Sequential& dis, models::Sequential& gen) {
  Variable z(random::rand({1, kLatent}, float32));
  dis(gen(z));
  int redrawn = 0;
  for (models::Sequential* model : {&dis, &gen}) {
    for (const auto& entry : model->entries()) {
      Parameter W;
      if (auto* l = dynamic_cast<L::Linear*>(entry.layer.get())) W = l->W;
      else if (auto* c = dynamic_cast<L::Conv2d*>(entry.layer.get())) W = c->W;
      else if (auto* d = dynamic_cast<L::Deconv2d*>(entry.layer.get())) W = d->W;
      else continue;
      W.set_data(random::randn(W.shape(), float32) * 0.02);
      ++redrawn;
    }
  }
  return redrawn;
}

}  // namespace

int main(int argc, char** argv) try {
  bool help = false;
  generative::Options o = generative::parse(argc, argv, "gan", 5, 128, help);
  if (help) return 0;
  Device dev = generative::pick_device(o, "gan");
  std::unique_ptr<datasets::Dataset> train_set = generative::load_train_images(o);
  if (!o.out.empty()) std::filesystem::create_directories(o.out);

  random::seed(o.seed);
  auto gen = make_generator();
  auto dis = make_discriminator();
  int redrawn = init_weight(*dis, *gen);

  optimizers::Adam opt_g(0.0002, 0.5), opt_d(0.0002, 0.5);
  opt_g.setup(*gen);
  opt_d.setup(*dis);

  // drop_last: gan.py skips the last batch when len(t) != batch_size.
  DataLoader train_loader(*train_set, o.batch_size, true, true);
  if (train_loader.size() == 0)
    throw ValueError("gan: " + std::to_string(train_set->size()) + " training images make no full batch of " +
                     std::to_string(o.batch_size) + "; hint: a smaller --batch-size");
  if (dev.is_cuda()) {
    train_loader.to_gpu();
    gen->to_gpu();
    dis->to_gpu();
  }
  const std::int64_t bs = o.batch_size, iters = generative::iterations(train_loader, o);
  Variable label_real(ones({bs}, float32, dev)), label_fake(zeros({bs}, float32, dev));
  Variable test_z(random::randn({25, kLatent}, float32, dev));
  std::printf("gan: G and D built, %d weights re-initialised N(0, 0.02); latent %lld, batch %lld, %lld iterations per epoch\n",
              redrawn, static_cast<long long>(kLatent), static_cast<long long>(bs), static_cast<long long>(iters));
  std::fflush(stdout);

  const std::int64_t interval = dev.is_cuda() ? 100 : 20;
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    double t0 = generative::now_s();
    Tensor sum_g = zeros({}, float64, dev), sum_d = zeros({}, float64, dev);
    std::int64_t cnt = 0;
    for (auto& [x, t] : train_loader) {
      (void)t;
      ++cnt;
      // (1) D: real images -> 1, generated ones (cut from G's graph) -> 0.
      Variable z(random::randn({bs, kLatent}, float32, dev));
      Variable fake = (*gen)(z);                  // (bs, 1, 28, 28)
      Variable y_real = (*dis)(x);                // (bs, 1)
      Variable y_fake = (*dis)(Variable(fake.data()));
      Variable loss_d = F::binary_cross_entropy(y_real, label_real) + F::binary_cross_entropy(y_fake, label_fake);
      gen->cleargrads();
      dis->cleargrads();
      loss_d.backward();
      opt_d.update();

      // (2) G: make D say 1 for the generated images (the gradient flows through D into G).
      y_fake = (*dis)(fake);
      Variable loss_g = F::binary_cross_entropy(y_fake, label_real);
      gen->cleargrads();
      dis->cleargrads();
      loss_g.backward();
      opt_g.update();

      sum_g += loss_g.data().astype(float64);
      sum_d += loss_d.data().astype(float64);
      if (cnt % interval == 0 && cnt < iters) {
        std::printf("epoch: %.2f, loss_g: %.4f, loss_d: %.4f\n", epoch + static_cast<double>(cnt) / iters,
                    sum_g.item<double>() / cnt, sum_d.item<double>() / cnt);
        std::fflush(stdout);
      }
      if (cnt == iters) break;
    }
    train_loader.reset();  // a --limit run stops before the loader's end: next epoch starts afresh
    double secs = generative::now_s() - t0;

    // gan.py's generate_image: 25 samples from the fixed test_z, BatchNorm in test mode.
    Tensor images;
    {
      auto test = test_mode();
      auto ng = no_grad();
      images = (*gen)(test_z).data().to_cpu();  // (25, 1, 28, 28) in (0, 1)
    }
    std::string png = generative::out_path(o, "gan_epoch" + std::to_string(epoch + 1) + ".png");
    utils::save_image(png, images);
    std::printf("epoch %d: loss_g %.4f, loss_d %.4f, %lld iterations, %.1f s; wrote %s\n", epoch + 1,
                sum_g.item<double>() / cnt, sum_d.item<double>() / cnt, static_cast<long long>(cnt), secs,
                png.c_str());
    std::fflush(stdout);
  }
  return 0;
} catch (const std::exception& e) {
  return example::report_error("gan", e);
}
