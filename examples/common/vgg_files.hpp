// examples/common/vgg_files.hpp - what the VGG16 programs (step58, grad_cam,
// style_transfer) share: their options, the book's pictures and VGG16's weights.
//
// The book downloads zebra.jpg (and style.jpg) and the 528 MB vgg16.npz without asking.
// These programs look for them in the cache folder ($DEZERO_HOME, else ~/.dezero) and
// download them only when asked to (--download); without the weights they run VGG16 with
// random weights and say so, so that a run without a network still shows the mechanics.
//
// Options (each program adds its own):
//   --image FILE        the picture (default: zebra.jpg from the cache, see --download)
//   --pretrained FILE   VGG16's weights (DeZero's vgg16.npz); default: vgg16.npz in the cache
//   --download          fetch what is missing from the book's and DeZero's releases
//   --device cpu|cuda   default: cuda when a GPU is present
#pragma once

#include <dezero/dezero.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include "device.hpp"

namespace vgg_files {

using namespace dezero;

inline const char* kImagesUrl = "https://github.com/oreilly-japan/deep-learning-from-scratch-3/raw/images/";

struct Options {
  std::string image, pretrained, device;
  bool download = false;
};

// Takes the shared options from argv[i] (advancing i past a value); false when argv[i] is not one of them.
inline bool parse_common(Options& o, int argc, char** argv, int& i) {
  const std::string a = argv[i];
  auto value = [&]() -> std::string {
    if (i + 1 >= argc) throw ValueError("option " + a + " needs a value");
    return argv[++i];
  };
  if (a == "--image") o.image = value();
  else if (a == "--pretrained") o.pretrained = value();
  else if (a == "--device") o.device = value();
  else if (a == "--download") o.download = true;
  else return false;
  if (!o.device.empty() && o.device != "cpu" && o.device != "cuda")
    throw ValueError("--device must be cpu or cuda, got " + o.device);
  return true;
}

inline Device pick_device(const Options& o) { return example::pick_device(o.device); }

// `given` when set, else the book's picture `name` (zebra.jpg, style.jpg) from the cache,
// downloaded first with --download. Throws an IOError that says what to do otherwise.
inline std::string picture(const Options& o, const std::string& given, const std::string& name,
                           const char* option = "--image") {
  if (!given.empty()) return given;
  const std::string cached = utils::cache_dir() + "/" + name;
  if (std::filesystem::exists(cached)) return cached;
  if (o.download) return utils::get_file(std::string(kImagesUrl) + name);
  throw IOError("no picture: pass " + std::string(option) + " FILE (PNG, JPEG or BMP), or put the book's " + name +
                " in " + utils::cache_dir() + " (" + kImagesUrl + name + "), or add --download to fetch it");
}

// Loads VGG16's weights into `model`: --pretrained FILE, else vgg16.npz in the cache
// (downloaded with --download). Without them the model keeps its random weights; prints
// which. Returns true when pretrained weights were loaded.
inline bool load_weights(models::VGG16& model, const Options& o) {
  std::string path = o.pretrained;
  const std::string cached = utils::cache_dir() + "/" + models::VGG16::weights_file();
  if (path.empty() && std::filesystem::exists(cached)) path = cached;
  if (path.empty() && o.download) path = models::pretrained_weights("VGG16", models::VGG16::weights_file());
  if (path.empty()) {
    std::cout << "no pretrained weights: VGG16 keeps its random weights, so what follows shows the mechanics, not\n"
              << "  a trained network's answers. For DeZero's weights put " << models::VGG16::weights_file()
              << " (528 MB, " << models::models_mirror() << models::VGG16::weights_file() << ")\n  in "
              << utils::cache_dir() << ", pass --pretrained FILE, or add --download.\n";
    return false;
  }
  model.load_weights(path);
  std::cout << "weights: " << path << "\n";
  return true;
}

}  // namespace vgg_files
