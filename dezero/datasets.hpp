/// \file
/// The namespace dezero::datasets: Dataset and the book's datasets (DeZero's
/// datasets.py): Spiral, SinCurve, MNIST, FashionMNIST, CIFAR10, ImageNet's labels, plus the
/// IDX file reader.
///
/// A Dataset holds its samples as whole tensors, data: (N, ...) and label: (N,) (or no
/// label), and get(i) returns (transform(data[i]), target_transform(label[i])) like
/// DeZero's `__getitem__`. Batch-applicable transforms (transforms.hpp) are applied once
/// to the whole data when the dataset is built, so data() holds the transformed samples
/// and get(i) gives the same values as DeZero; get_batch() then gathers a batch with one
/// take(). Other transforms run per sample.
///
/// Labels are int64 (NumPy's default int, what softmax_cross_entropy indexes with).
/// MNIST images, uint8 in the files, become int32 (dezero has no uint8) before the
/// transform; the default transform makes them float32 (784,) in [0, 1].
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "dezero/tensor.hpp"
#include "dezero/transforms.hpp"

namespace dezero {

/// One sample or one batch: (x, t). t is undefined (t.defined() == false) for unlabelled data.
using Batch = std::pair<Tensor, Tensor>;

/// dezero::datasets: Dataset and the book's datasets (DeZero's dezero.datasets).
///
/// Spiral and SinCurve are generated; MNIST, FashionMNIST and CIFAR10 are read from their
/// files, downloaded once into the cache directory (utils::cache_dir(): $DEZERO_HOME, else
/// ~/.dezero) when missing; ImageNet only has its class names. read_idx() reads MNIST's
/// IDX files.
namespace datasets {

using transforms::Transform;

// --- Dataset ---------------------------------------------------------------------------
/// A set of samples held as whole tensors, data: (N, ...) and label: (N, ...) or none
/// (DeZero's Dataset).
///
/// get(i) returns (transform(data[i]), target_transform(label[i])) like DeZero's
/// `__getitem__`; size() is len(dataset). Batchable transforms are applied once to the whole
/// data when the dataset is built (data() holds the transformed samples); the others run
/// per sample in get() and get_batch(). A Dataset is a value: copies hold the same tensors.
///
/// ```cpp
///   Tensor x = random::randn({100, 2}), t = random::randint(0, 3, {100});
///   datasets::Dataset ds(x, t);
///   auto [x0, t0] = ds.get(0);   // x0: (2,), t0: () int64
/// ```
class Dataset {
 public:
  /// A dataset of the given tensors: data: (N, ...), label: (N, ...) or undefined.
  /// ValueError when data is undefined; ShapeError when data is 0-d or label's length is
  /// not N; DeviceError when data and label live on different devices.
  Dataset(Tensor data, Tensor label, Transform transform = {}, Transform target_transform = {});
  virtual ~Dataset() = default;
  /// Copies share the stored tensors and the transforms.
  ///@{
  Dataset(const Dataset&) = default;
  Dataset& operator=(const Dataset&) = default;
  ///@}

  virtual std::int64_t size() const;  ///< len(dataset): N (0 when there is no data).
  /// (transform(data[i]), target_transform(label[i])); negative i counts from the end.
  /// t is undefined for unlabelled data; IndexError when `index` is out of range.
  virtual Batch get(std::int64_t index) const;
  /// The samples at `indices` stacked along a new axis 0: x (B, ...), t (B, ...).
  /// One gather when the transforms are batchable, else get() per sample.
  /// A subclass that overrides get() and keeps data() defined must override this too.
  /// ValueError when `indices` is empty, IndexError when one is out of range.
  virtual Batch get_batch(const std::vector<std::int64_t>& indices) const;
  /// The samples at `indices`, in that order, as a Dataset of their own (PyTorch's Subset,
  /// Chainer's SubDataset): for a train/validation split, cut the indices of a
  /// random::permutation in two and take `ds.subset(first)` and `ds.subset(rest)`. The stored rows are copied (so the subset outlives `this`) and the
  /// transforms kept, so a random transform still runs per access. For a subclass that computes
  /// its samples in get() (data() undefined), the samples are computed once, here.
  /// ValueError when `indices` is empty, IndexError when one is out of range.
  Dataset subset(const std::vector<std::int64_t>& indices) const;

  /// The stored tensors (after the transforms that were applied at load time).
  ///@{
  const Tensor& data() const { return data_; }
  const Tensor& label() const { return label_; }
  ///@}
  bool train() const { return train_; }  ///< True for the training split (DeZero's train).
  const Transform& transform() const { return transform_; }                ///< The transform of the samples.
  const Transform& target_transform() const { return target_transform_; }  ///< The transform of the labels.

  Device device() const;  ///< Where data() lives (the CPU when there is no data).
  /// Moves data and label to `device` (DeviceError when it is a CUDA device and there is none).
  void to(Device device);
  void to_cpu() { to(Device::cpu()); }  ///< Moves data and label to host memory.
  /// Moves data and label to CUDA device `id` (DeviceError without a GPU).
  void to_gpu(int id = 0) { to(Device::cuda(id)); }

 protected:
  /// For subclasses: set data_ / label_, then call apply_batchable_transforms().
  explicit Dataset(bool train, Transform transform = {}, Transform target_transform = {});
  /// Applies each batchable transform to the whole stored tensor, once.
  void apply_batchable_transforms();

  bool train_ = true;  ///< The split: true for training data.
  /// The samples, (N, ...), and the labels, (N, ...) or undefined.
  ///@{
  Tensor data_, label_;
  ///@}
  /// The transforms of the samples and of the labels.
  ///@{
  Transform transform_, target_transform_;
  ///@}
  /// True once transform_ / target_transform_ has been applied to the whole data_ / label_.
  ///@{
  bool data_transformed_ = false, label_transformed_ = false;
  ///@}

 private:
  std::int64_t checked_index(std::int64_t i) const;
  Tensor data_batch(const std::vector<std::int64_t>& indices) const;
  Tensor label_batch(const std::vector<std::int64_t>& indices) const;
};

// --- toy datasets ------------------------------------------------------------------------
/// The spiral data of steps 48-50 as (x, t).
///
/// Steps 48-50: seeds the global RNG with 1984 (train) / 2020 (test) like DeZero, draws
/// 3 classes x 100 points with randn noise, then shuffles with permutation(300).
/// x: (300, 2) float32, t: (300,) int64. Leaves the RNG where DeZero leaves it.
std::pair<Tensor, Tensor> get_spiral(bool train = true);

/// get_spiral() as a Dataset: x (300, 2) float32, t (300,) int64 (DeZero's Spiral).
class Spiral : public Dataset {
 public:
  /// The training (seed 1984) or test (seed 2020) spiral, through the given transforms.
  explicit Spiral(bool train = true, Transform transform = {}, Transform target_transform = {});
};

/// The sine curve of step 60, for time-series prediction (DeZero's SinCurve).
///
/// Step 60: 1000 points of sin (train, plus uniform(-0.05, 0.05) noise) or cos (test) over
/// [0, 2 pi]; data = y[:-1], label = y[1:], both (999, 1) float64. Draws the noise in both modes.
class SinCurve : public Dataset {
 public:
  /// The noisy sine (train) or the cosine (test), through the given transforms.
  explicit SinCurve(bool train = true, Transform transform = {}, Transform target_transform = {});
};

// --- IDX files (MNIST's format) -----------------------------------------------------------
/// Reads an IDX file of unsigned bytes (MNIST's format) into an int32 tensor.
///
/// Reads a gzip-compressed (or plain) IDX file of unsigned bytes (magic 0x0801 with one
/// dimension, 0x0803 with three): returns int32 (N,) or (N, rows, cols). The magic number,
/// the dimensions and the data size are checked; a truncated or corrupt file is an
/// IOError naming the file. A header that declares more elements than
/// get_max_idx_elements() is an IOError before anything is read or allocated.
Tensor read_idx(const std::string& path);

// --- size caps -----------------------------------------------------------------------------
/// Caps on what a file may make the readers allocate, checked against the sizes a file
/// declares before anything is allocated (a small compressed file can declare, and inflate
/// to, gigabytes). Like utils::set_max_image_pixels: process-wide, thread-safe, a ValueError
/// for a value <= 0. A file beyond a cap is an IOError naming its declared size, the cap
/// and the setter. The .npz cap is utils::set_max_npz_bytes (npz.hpp).
///
/// read_idx (MNIST, Fashion-MNIST): the most elements (bytes) one IDX file may declare.
/// Default 2^28 = 268,435,456, about 5.7 times MNIST's 60,000 x 28 x 28 training images
/// (each element becomes 4 bytes of int32, so the default allows about 1 GiB).
void set_max_idx_elements(std::int64_t elements);
/// The cap set by set_max_idx_elements (default 2^28).
std::int64_t get_max_idx_elements();
/// CIFAR10: the most samples (1 + 3072-byte records) read from an archive for one split,
/// counting every copy of a wanted member (tar allows repeats). Default 60,000: all of
/// CIFAR-10 (50,000 training + 10,000 test images).
void set_max_cifar_samples(std::int64_t samples);
/// The cap set by set_max_cifar_samples (default 60,000).
std::int64_t get_max_cifar_samples();

// --- MNIST -------------------------------------------------------------------------------
/// The MNIST handwritten digits: 60000 training or 10000 test images (DeZero's MNIST).
///
/// Files train-images-idx3-ubyte.gz / train-labels-idx1-ubyte.gz (train) or t10k-* (test)
/// in `dir`, else $DEZERO_HOME, else ~/.dezero. Missing files are downloaded from
/// `mirror`, else $DEZERO_MNIST_MIRROR, else DeZero's https://ossci-datasets.s3.amazonaws.com/mnist/.
/// x: images (N, 1, 28, 28) int32 through `transform` (default: float32 (784,) in [0, 1],
/// for an MLP; image_transform() keeps the (1, 28, 28) form a CNN needs), t: int64 (N,).
///
/// ```cpp
///   datasets::MNIST mlp_data(true);                                      // x: (784,) float32
///   datasets::MNIST cnn_data(true, datasets::MNIST::image_transform());  // x: (1, 28, 28) float32
/// ```
///
/// Every download is checked against the file's published SHA-256, whatever the mirror. Without
/// `dir` the files live in the cache folder (see utils::get_file for its checks), and a file
/// already there is checked against its SHA-256 on every load: a different file is an IOError
/// naming both hashes (delete it to have it downloaded again). A file already in an explicit
/// `dir` is the caller's and is read as it is. A file that cannot be downloaded, or is
/// truncated or corrupt, is an IOError naming it.
class MNIST : public Dataset {
 public:
  /// Loads the training or the test split (downloading missing files, see the class).
  explicit MNIST(bool train = true, Transform transform = default_transform(), Transform target_transform = {},
                 const std::string& dir = "", const std::string& mirror = "");
  /// Compose({Flatten(), ToFloat(), Normalize(0, 255)}): float32 (784,) in [0, 1].
  static Transform default_transform();
  /// Compose({ToFloat(), Normalize(0, 255)}): float32 (1, 28, 28) in [0, 1], unflattened: the
  /// form a CNN (L::Conv2d) takes; get_batch gives (B, 1, 28, 28).
  static Transform image_transform();
  /// DeZero's mirror, "https://ossci-datasets.s3.amazonaws.com/mnist/".
  static const char* default_mirror();
  static std::map<int, std::string> labels();  ///< The class names: {0: "0", ..., 9: "9"}.

 protected:
  /// The paths of an images file and a labels file.
  struct Files {
    /// The IDX files of the images, (N, rows, cols), and of the labels, (N,).
    ///@{
    std::string images, labels;
    ///@}
  };
  /// For subclasses: loads the given files (no lookup, no download).
  MNIST(bool train, Transform transform, Transform target_transform, const Files& files);
  /// Reads the files into data_ (N, 1, rows, cols) int32 and label_ (N,) int64, then applies
  /// the batchable transforms. IOError when the files do not hold N images and N labels.
  void load(const Files& files);
};

/// Zalando's Fashion-MNIST: MNIST's format with 10 kinds of clothing (not part of DeZero).
///
/// Zalando's Fashion-MNIST (same format, same file names, not part of DeZero). Files are
/// looked for in `dir`; without one in $DEZERO_HOME/fashion-mnist (or ~/.dezero/fashion-mnist,
/// checked against Zalando's SHA-256 as MNIST's cache is), then in
/// /usr/share/datasets/fashion-mnist (Debian's dataset-fashion-mnist package, installed by root
/// and recompressed: read as it is); missing ones are downloaded into `dir` (or the cache) from
/// `mirror`, else $DEZERO_FASHION_MNIST_MIRROR, else Zalando's repository over https (the same
/// files as its http-only S3 site), and checked against their SHA-256. MNIST::image_transform()
/// gives the (1, 28, 28) form here too.
class FashionMNIST : public MNIST {
 public:
  /// Loads the training or the test split (looking for the files as the class says).
  explicit FashionMNIST(bool train = true, Transform transform = default_transform(), Transform target_transform = {},
                        const std::string& dir = "", const std::string& mirror = "");
  /// Zalando's files over https: "https://raw.githubusercontent.com/zalandoresearch/fashion-mnist/master/data/fashion/"
  /// (http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/ serves the same files over http only).
  static const char* default_mirror();
  static const char* system_dir();  ///< Debian's copy: "/usr/share/datasets/fashion-mnist".
  static std::map<int, std::string> labels();  ///< The class names: {0: "T-shirt/top", ..., 9: "Ankle boot"}.
};

// --- CIFAR-10 ----------------------------------------------------------------------------
/// CIFAR-10: 50000 training or 10000 test 32x32 colour images of 10 classes (DeZero's CIFAR10).
///
/// The binary distribution cifar-10-binary.tar.gz (https://www.cs.toronto.edu/~kriz/cifar.html),
/// read in place with libarchive: members cifar-10-batches-bin/data_batch_1.bin .. _5.bin (train,
/// 50000 images, in that order) and test_batch.bin (test, 10000). Each file is records of
/// 1 label byte + 3072 pixel bytes: the R plane, then G, then B, each 32x32 row-major.
/// The archive is looked for in `dir`, else $DEZERO_HOME (or ~/.dezero); when missing it is
/// downloaded there from `mirror`, else $DEZERO_CIFAR10_MIRROR, else https://www.cs.toronto.edu/~kriz/,
/// and checked against its published SHA-256 (c4a38c50...a1dd); a copy in the cache folder is
/// checked on every load, one in an explicit `dir` is read as it is (as MNIST's files are).
/// An archive whose wanted members hold more than get_max_cifar_samples() records is an IOError
/// before they are read.
/// (DeZero reads the Python distribution, cifar-10-python.tar.gz, whose pickles C++ cannot
/// read; the two hold the same images in the same order.)
/// x: images (N, 3, 32, 32) int32 in [0, 255] through `transform`, t: int64 (N,) in [0, 9].
/// Every wanted member must be there, a whole non-zero number of records with labels 0-9; a
/// missing, truncated or corrupt archive is an IOError naming the file, and nothing is kept.
/// libdezero does not link libarchive: the first CIFAR10 dlopen()s libarchive.so.13 (or
/// $DEZERO_LIBARCHIVE, a file name or path); without it CIFAR10 is an IOError saying so.
class CIFAR10 : public Dataset {
 public:
  /// Loads the training or the test split (downloading the archive when missing, see the class).
  explicit CIFAR10(bool train = true, Transform transform = default_transform(), Transform target_transform = {},
                   const std::string& dir = "", const std::string& mirror = "");
  /// Compose({ToFloat(), Normalize(127.5, 127.5)}): float32 in [-1, 1].
  ///
  /// DeZero's default is
  /// Compose([ToFloat(), Normalize(mean=0.5, std=0.5)]) on the 0-255 data, which gives values in
  /// [-1, 509] (a known quirk, reference/dezero-inventory.md section 14 item 15); we normalise as
  /// DeZero evidently meant to. Pass Compose({ToFloat(), Normalize(0.5, 0.5)}) for DeZero's values.
  static Transform default_transform();
  static const char* default_mirror();  ///< "https://www.cs.toronto.edu/~kriz/".
  static const char* file_name();       ///< The archive's name: "cifar-10-binary.tar.gz".
  /// {0: "airplane", 1: "automobile", ..., 9: "truck"} (DeZero spells 0 "ariplane"; we do not).
  static std::map<int, std::string> labels();
};

// --- ImageNet ----------------------------------------------------------------------------
/// ImageNet's class names (DeZero's ImageNet).
///
/// Only the class names (DeZero's ImageNet dataset is a stub too; step 58 uses labels()).
class ImageNet {
 public:
  /// The 1000 ILSVRC-2012 classes, index -> the comma-separated WordNet synonyms of its synset:
  /// {0: "tench, Tinca tinca", 1: "goldfish, Carassius auratus", ..., 999: "toilet tissue, toilet
  /// paper, bathroom tissue"}: the list DeZero downloads, shipped in the library.
  static std::map<int, std::string> labels();
};

}  // namespace datasets
}  // namespace dezero
