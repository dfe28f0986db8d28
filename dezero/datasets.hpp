// dezero/datasets.hpp - dezero::datasets: Dataset and the book's datasets (DeZero's
// datasets.py): Spiral, SinCurve, MNIST, FashionMNIST, CIFAR10, ImageNet's labels, plus the
// IDX file reader.
//
// A Dataset holds its samples as whole tensors, data: (N, ...) and label: (N,) (or no
// label), and get(i) returns (transform(data[i]), target_transform(label[i])) like
// DeZero's __getitem__. Batch-applicable transforms (transforms.hpp) are applied once
// to the whole data when the dataset is built, so data() holds the transformed samples
// and get(i) gives the same values as DeZero; get_batch() then gathers a batch with one
// take(). Other transforms run per sample.
//
// Labels are int64 (NumPy's default int, what softmax_cross_entropy indexes with).
// MNIST images, uint8 in the files, become int32 (dezero has no uint8) before the
// transform; the default transform makes them float32 (784,) in [0, 1].
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "dezero/tensor.hpp"
#include "dezero/transforms.hpp"

namespace dezero {

// One sample or one batch: (x, t). t is undefined (t.defined() == false) for unlabelled data.
using Batch = std::pair<Tensor, Tensor>;

namespace datasets {

using transforms::Transform;

// --- Dataset ---------------------------------------------------------------------------
class Dataset {
 public:
  // data: (N, ...), label: (N, ...) or undefined.
  Dataset(Tensor data, Tensor label, Transform transform = {}, Transform target_transform = {});
  virtual ~Dataset() = default;
  Dataset(const Dataset&) = default;
  Dataset& operator=(const Dataset&) = default;

  virtual std::int64_t size() const;  // len(dataset)
  // (transform(data[i]), target_transform(label[i])); negative i counts from the end.
  virtual Batch get(std::int64_t index) const;
  // The samples at `indices` stacked along a new axis 0: x (B, ...), t (B, ...).
  // One gather when the transforms are batchable, else get() per sample.
  // A subclass that overrides get() and keeps data() defined must override this too.
  virtual Batch get_batch(const std::vector<std::int64_t>& indices) const;

  // The stored tensors (after the transforms that were applied at load time).
  const Tensor& data() const { return data_; }
  const Tensor& label() const { return label_; }
  bool train() const { return train_; }
  const Transform& transform() const { return transform_; }
  const Transform& target_transform() const { return target_transform_; }

  Device device() const;
  void to(Device device);  // moves data and label
  void to_cpu() { to(Device::cpu()); }
  void to_gpu(int id = 0) { to(Device::cuda(id)); }

 protected:
  // For subclasses: set data_ / label_, then call apply_batchable_transforms().
  explicit Dataset(bool train, Transform transform = {}, Transform target_transform = {});
  // Applies each batchable transform to the whole stored tensor, once.
  void apply_batchable_transforms();

  bool train_ = true;
  Tensor data_, label_;
  Transform transform_, target_transform_;
  bool data_transformed_ = false, label_transformed_ = false;

 private:
  std::int64_t checked_index(std::int64_t i) const;
  Tensor data_batch(const std::vector<std::int64_t>& indices) const;
  Tensor label_batch(const std::vector<std::int64_t>& indices) const;
};

// --- toy datasets ------------------------------------------------------------------------
// Steps 48-50: seeds the global RNG with 1984 (train) / 2020 (test) like DeZero, draws
// 3 classes x 100 points with randn noise, then shuffles with permutation(300).
// x: (300, 2) float32, t: (300,) int64. Leaves the RNG where DeZero leaves it.
std::pair<Tensor, Tensor> get_spiral(bool train = true);

class Spiral : public Dataset {
 public:
  explicit Spiral(bool train = true, Transform transform = {}, Transform target_transform = {});
};

// Step 60: 1000 points of sin (train, plus uniform(-0.05, 0.05) noise) or cos (test) over
// [0, 2 pi]; data = y[:-1], label = y[1:], both (999, 1) float64. Draws the noise in both modes.
class SinCurve : public Dataset {
 public:
  explicit SinCurve(bool train = true, Transform transform = {}, Transform target_transform = {});
};

// --- IDX files (MNIST's format) -----------------------------------------------------------
// Reads a gzip-compressed (or plain) IDX file of unsigned bytes (magic 0x0801 with one
// dimension, 0x0803 with three): returns int32 (N,) or (N, rows, cols). The magic number,
// the dimensions and the data size are checked; a truncated or corrupt file is an
// IOError naming the file.
Tensor read_idx(const std::string& path);

// --- MNIST -------------------------------------------------------------------------------
// Files train-images-idx3-ubyte.gz / train-labels-idx1-ubyte.gz (train) or t10k-* (test)
// in `dir`, else $DEZERO_HOME, else ~/.dezero. Missing files are downloaded from
// `mirror`, else $DEZERO_MNIST_MIRROR, else DeZero's https://ossci-datasets.s3.amazonaws.com/mnist/.
// x: images (N, 1, 28, 28) int32 through `transform` (default: float32 (784,) in [0, 1]),
// t: int64 (N,).
class MNIST : public Dataset {
 public:
  explicit MNIST(bool train = true, Transform transform = default_transform(), Transform target_transform = {},
                 const std::string& dir = "", const std::string& mirror = "");
  static Transform default_transform();  // Compose({Flatten(), ToFloat(), Normalize(0, 255)})
  static const char* default_mirror();
  static std::map<int, std::string> labels();  // {0: "0", ..., 9: "9"}

 protected:
  struct Files {
    std::string images, labels;
  };
  MNIST(bool train, Transform transform, Transform target_transform, const Files& files);
  void load(const Files& files);
};

// Zalando's Fashion-MNIST (same format, same file names, not part of DeZero). Files are
// looked for in `dir`; without one in $DEZERO_HOME/fashion-mnist (or ~/.dezero/fashion-mnist),
// then in /usr/share/datasets/fashion-mnist (Debian's dataset-fashion-mnist package);
// missing ones are downloaded into `dir` (or the cache) from `mirror`, else
// $DEZERO_FASHION_MNIST_MIRROR, else Zalando's http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/.
class FashionMNIST : public MNIST {
 public:
  explicit FashionMNIST(bool train = true, Transform transform = default_transform(), Transform target_transform = {},
                        const std::string& dir = "", const std::string& mirror = "");
  static const char* default_mirror();
  static const char* system_dir();  // "/usr/share/datasets/fashion-mnist"
  static std::map<int, std::string> labels();  // {0: "T-shirt/top", ..., 9: "Ankle boot"}
};

// --- CIFAR-10 ----------------------------------------------------------------------------
// The binary distribution cifar-10-binary.tar.gz (https://www.cs.toronto.edu/~kriz/cifar.html),
// read in place with libarchive: members cifar-10-batches-bin/data_batch_1.bin .. _5.bin (train,
// 50000 images, in that order) and test_batch.bin (test, 10000). Each file is records of
// 1 label byte + 3072 pixel bytes: the R plane, then G, then B, each 32x32 row-major.
// The archive is looked for in `dir`, else $DEZERO_HOME (or ~/.dezero); when missing it is
// downloaded there from `mirror`, else $DEZERO_CIFAR10_MIRROR, else https://www.cs.toronto.edu/~kriz/.
// (DeZero reads the Python distribution, cifar-10-python.tar.gz, whose pickles C++ cannot
// read; the two hold the same images in the same order.)
// x: images (N, 3, 32, 32) int32 in [0, 255] through `transform`, t: int64 (N,) in [0, 9].
// Every wanted member must be there, a whole non-zero number of records with labels 0-9; a
// missing, truncated or corrupt archive is an IOError naming the file, and nothing is kept.
// libdezero does not link libarchive: the first CIFAR10 dlopen()s libarchive.so.13 (or
// $DEZERO_LIBARCHIVE, a file name or path); without it CIFAR10 is an IOError saying so.
class CIFAR10 : public Dataset {
 public:
  explicit CIFAR10(bool train = true, Transform transform = default_transform(), Transform target_transform = {},
                   const std::string& dir = "", const std::string& mirror = "");
  // Compose({ToFloat(), Normalize(127.5, 127.5)}): float32 in [-1, 1]. DeZero's default is
  // Compose([ToFloat(), Normalize(mean=0.5, std=0.5)]) on the 0-255 data, which gives values in
  // [-1, 509] (a known quirk, reference/dezero-inventory.md section 14 item 15); we normalise as
  // DeZero evidently meant to. Pass Compose({ToFloat(), Normalize(0.5, 0.5)}) for DeZero's values.
  static Transform default_transform();
  static const char* default_mirror();  // "https://www.cs.toronto.edu/~kriz/"
  static const char* file_name();       // "cifar-10-binary.tar.gz"
  // {0: "airplane", 1: "automobile", ..., 9: "truck"} (DeZero spells 0 "ariplane"; we do not).
  static std::map<int, std::string> labels();
};

// --- ImageNet ----------------------------------------------------------------------------
// Only the class names (DeZero's ImageNet dataset is a stub too; step 58 uses labels()).
class ImageNet {
 public:
  // The 1000 ILSVRC-2012 classes, index -> the comma-separated WordNet synonyms of its synset:
  // {0: "tench, Tinca tinca", 1: "goldfish, Carassius auratus", ..., 999: "toilet tissue, toilet
  // paper, bathroom tissue"}: the list DeZero downloads, shipped in the library.
  static std::map<int, std::string> labels();
};

}  // namespace datasets
}  // namespace dezero
