// examples/vae.cpp - DeZero's convolutional variational autoencoder (examples/vae.py) on
// MNIST, or on Fashion-MNIST when the MNIST files are absent. The encoder maps an image
// to a Gaussian over a 2-d latent z, the decoder maps z back to an image; the loss is
// the negative ELBO: reconstruction (binary cross-entropy) + KL(q(z|x) || N(0, I)).
//
//   Encoder: x (N, 1, 28, 28) -> Conv2d(32, k3, s1, p1) -> ReLU -> Conv2d(64, k3, s2, p1) -> ReLU (N, 64, 14, 14)
//            -> Conv2d(64, k3, s1, p1) -> ReLU -> Conv2d(64, k3, s1, p1) -> ReLU -> flatten (N, 12544)
//            -> Linear(32) -> ReLU -> (Linear(2): z_mean, Linear(2): z_log_var)      each (N, 2)
//   Decoder: z (N, 2) -> Linear(64*14*14) -> ReLU -> reshape (N, 64, 14, 14)
//            -> Deconv2d(32, k4, s2, p1) -> ReLU (N, 32, 28, 28) -> Conv2d(1, k3, s1, p1) -> sigmoid (N, 1, 28, 28)
//   loss = binary_cross_entropy(flatten(y), flatten(x)) + sum((mean^2 + exp(log_var) - log_var - 1) / 2) / len(x)
//
// As vae.py: latent 2, batch 16, 10 epochs, Adam() (alpha 0.001), images x / 255 as float32,
// one Monte-Carlo sample (k = 1), C = 1. One fix: the sampling (see Encoder::sampling).
// After each epoch it writes
//   <out>/vae_latent_epoch<k>.png   vae.py's show_digits: a 15x15 grid of decoded z, z = (x_j, y_i)
//                                   over norm.ppf(linspace(0.05, 0.95, 15)) (inverse_normal_cdf below)
//   <out>/vae_reconstruction_epoch<k>.png   the first 8 training images (top row) over their
//                                   reconstructions decoder(z_mean) (bottom row)
// (utils::save_image's grids: 2 black pixels between the tiles.)
//
// Options: see examples/common/generative.hpp (--epochs, --batch-size, --limit, --device,
// --out, --data, --dataset, --seed).
#include <dezero/image.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "common/generative.hpp"
#include "common/report.hpp"

using namespace dezero;

namespace {

constexpr std::int64_t kLatent = 2;

class Encoder : public Model {
 public:
  explicit Encoder(std::int64_t latent_size) : latent_size(latent_size) {
    conv1 = register_layer("conv1", std::make_shared<L::Conv2d>(32, 3, 1, 1));
    conv2 = register_layer("conv2", std::make_shared<L::Conv2d>(64, 3, 2, 1));
    conv3 = register_layer("conv3", std::make_shared<L::Conv2d>(64, 3, 1, 1));
    conv4 = register_layer("conv4", std::make_shared<L::Conv2d>(64, 3, 1, 1));
    linear1 = register_layer("linear1", std::make_shared<L::Linear>(32));
    linear2 = register_layer("linear2", std::make_shared<L::Linear>(latent_size));
    linear3 = register_layer("linear3", std::make_shared<L::Linear>(latent_size));
  }
  // x (N, 1, 28, 28) -> {z_mean (N, latent), z_log_var (N, latent)}
  VariableList forward_multi(const VariableList& xs) override {
    Variable x = F::relu(conv1(xs[0]));  // (N, 32, 28, 28)
    x = F::relu(conv2(x));               // (N, 64, 14, 14)
    x = F::relu(conv3(x));
    x = F::relu(conv4(x));
    x = F::relu(linear1(F::flatten(x)));  // (N, 32)
    return {linear2(x), linear3(x)};
  }
  // The reparameterisation trick: z = mean + sigma * eps, eps ~ N(0, I), sigma = exp(log_var / 2).
  // DeZero's vae.py multiplies by exp(z_log_var) - the variance, not the standard
  // deviation - which does not match the KL term below; we use exp(0.5 * log_var).
  Variable sampling(const Variable& z_mean, const Variable& z_log_var) const {
    Tensor eps = random::randn({z_mean.len(), latent_size}, z_mean.dtype(), z_mean.data().device());
    return z_mean + F::exp(z_log_var * 0.5) * eps;
  }

  std::int64_t latent_size;
  L::LayerRef<L::Conv2d> conv1, conv2, conv3, conv4;
  L::LayerRef<L::Linear> linear1, linear2, linear3;
};

class Decoder : public Model {
 public:
  Decoder() {
    linear = register_layer("linear", std::make_shared<L::Linear>(64 * 14 * 14));
    deconv = register_layer("deconv", std::make_shared<L::Deconv2d>(32, 4, 2, 1));
    conv = register_layer("conv", std::make_shared<L::Conv2d>(1, 3, 1, 1));
  }
  // z (N, latent) -> images (N, 1, 28, 28) in (0, 1)
  Variable forward(const Variable& z) override {
    Variable x = F::reshape(F::relu(linear(z)), {-1, 64, 14, 14});
    x = F::relu(deconv(x));  // (N, 32, 28, 28)
    return F::sigmoid(conv(x));
  }
  L::LayerRef<L::Linear> linear;
  L::LayerRef<L::Deconv2d> deconv;
  L::LayerRef<L::Conv2d> conv;
};

class VAE : public Model {
 public:
  explicit VAE(std::int64_t latent_size) {
    encoder = register_layer("encoder", std::make_shared<Encoder>(latent_size));
    decoder = register_layer("decoder", std::make_shared<Decoder>());
  }
  // The loss: -ELBO with one sample of z (vae.py's k = 1, C = 1.0).
  Variable forward(const Variable& x) override {
    VariableList stats = encoder(VariableList{x});
    const Variable &z_mean = stats[0], &z_log_var = stats[1];
    Variable z = encoder->sampling(z_mean, z_log_var);
    Variable y = decoder(z);
    Variable rec_loss = F::binary_cross_entropy(F::flatten(y), F::flatten(x));
    Variable kl = (z_mean * z_mean + F::exp(z_log_var) - z_log_var - 1.0) * 0.5;
    return rec_loss + F::sum(kl) / static_cast<double>(x.len());
  }
  L::LayerRef<Encoder> encoder;
  L::LayerRef<Decoder> decoder;
};

// The standard normal quantile function (scipy.stats.norm.ppf, which vae.py uses), p in (0, 1):
// Acklam's rational approximation (relative error < 1.2e-9), then one Halley step on
// Phi(x) - p with Phi from std::erfc, which brings it to double precision (the 15 grid
// values match Python's statistics.NormalDist().inv_cdf to 2e-15; near p = 1 the
// rounding of 1 - p limits it).
double inverse_normal_cdf(double p) {
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01,  -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  const double lo = 0.02425;
  double x;
  if (p < lo) {
    double q = std::sqrt(-2 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p <= 1 - lo) {
    double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  } else {
    double q = std::sqrt(-2 * std::log(1 - p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
  const double pi = std::acos(-1.0);
  double u = e * std::sqrt(2 * pi) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}

// vae.py's show_digits: decode z = (grid[j], grid[i]) for the 15x15 grid of normal quantiles.
void write_latent_grid(VAE& vae, Device dev, const std::string& path) {
  const int n = 15;
  std::vector<double> grid(n);
  for (int i = 0; i < n; ++i) grid[i] = inverse_normal_cdf(0.05 + 0.9 * i / (n - 1));  // linspace(0.05, 0.95, 15)
  std::vector<float> z;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      z.push_back(static_cast<float>(grid[j]));  // x: across
      z.push_back(static_cast<float>(grid[i]));  // y: down
    }
  auto test = test_mode();
  auto ng = no_grad();
  Tensor decoded = vae.decoder(Variable(array(z, {n * n, kLatent}, float32, dev))).data().to_cpu();
  utils::save_image(path, decoded, 255, n);  // 15 columns, row i = grid[i]
}

// The first images of the training set (top row) over decoder(z_mean) of each (bottom row).
void write_reconstructions(VAE& vae, const datasets::Dataset& train_set, Device dev, const std::string& path) {
  const std::int64_t k = std::min<std::int64_t>(8, train_set.size());
  std::vector<std::int64_t> idx(k);
  for (std::int64_t i = 0; i < k; ++i) idx[i] = i;
  Tensor x = train_set.get_batch(idx).first.to(dev);  // (k, 1, 28, 28)
  auto test = test_mode();
  auto ng = no_grad();
  Variable z_mean = vae.encoder(VariableList{Variable(x)})[0];
  Tensor y = vae.decoder(z_mean).data().to_cpu();
  std::vector<float> both = x.to_cpu().to_vector<float>(), rec = y.to_vector<float>();
  both.insert(both.end(), rec.begin(), rec.end());
  utils::save_image(path, array(both, {2 * k, 1, 28, 28}, float32), 255, k);  // k columns: 2 rows
}

}  // namespace

int main(int argc, char** argv) try {
  bool help = false;
  generative::Options o = generative::parse(argc, argv, "vae", 10, 16, help);
  if (help) return 0;
  Device dev = generative::pick_device(o, "vae");
  std::unique_ptr<datasets::Dataset> train_set = generative::load_train_images(o);
  if (!o.out.empty()) std::filesystem::create_directories(o.out);

  random::seed(o.seed);
  VAE vae(kLatent);
  optimizers::Adam optimizer;
  optimizer.setup(vae);
  DataLoader train_loader(*train_set, o.batch_size);  // vae.py keeps the last, smaller batch
  if (dev.is_cuda()) {
    train_loader.to_gpu();
    vae.to_gpu();
  }
  const std::int64_t iters = generative::iterations(train_loader, o);
  std::printf("vae: latent %lld, batch %lld, %lld iterations per epoch, Adam(alpha 0.001)\n",
              static_cast<long long>(kLatent), static_cast<long long>(o.batch_size), static_cast<long long>(iters));
  std::fflush(stdout);

  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    double t0 = generative::now_s();
    Tensor sum_loss = zeros({}, float64, dev);
    std::int64_t cnt = 0;
    for (auto& [x, t] : train_loader) {
      (void)t;
      ++cnt;
      Variable loss = vae(x);
      vae.cleargrads();
      loss.backward();
      optimizer.update();
      sum_loss += loss.data().astype(float64);
      // vae.py prints every 100 iterations for the first 1000, then every 1000.
      std::int64_t interval = cnt < 1000 ? 100 : 1000;
      if (cnt % interval == 0 && cnt < iters) {
        std::printf("epoch: %.2f, loss: %.4f\n", epoch + static_cast<double>(cnt) / iters,
                    sum_loss.item<double>() / cnt);
        std::fflush(stdout);
      }
      if (cnt == iters) break;
    }
    train_loader.reset();
    double secs = generative::now_s() - t0;
    std::string latent = generative::out_path(o, "vae_latent_epoch" + std::to_string(epoch + 1) + ".png");
    std::string recon = generative::out_path(o, "vae_reconstruction_epoch" + std::to_string(epoch + 1) + ".png");
    write_latent_grid(vae, dev, latent);
    write_reconstructions(vae, *train_set, dev, recon);
    std::printf("epoch %d: loss %.4f, %lld iterations, %.1f s; wrote %s and %s\n", epoch + 1,
                sum_loss.item<double>() / cnt, static_cast<long long>(cnt), secs, latent.c_str(), recon.c_str());
    std::fflush(stdout);
  }
  return 0;
} catch (const std::exception& e) {
  return example::report_error("vae", e);
}
