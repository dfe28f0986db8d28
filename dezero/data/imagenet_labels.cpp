// dezero/data/imagenet_labels.cpp - datasets::ImageNet::labels(): the 1000 ILSVRC-2012 class names,
// compiled in from imagenet_labels.inc (DeZero's step 58 downloads the same list; we ship it).
#include <map>
#include <string>

#include "dezero/datasets.hpp"

namespace dezero::datasets {

namespace {
const char* const kImageNetLabels[] = {
#include "imagenet_labels.inc"
};
static_assert(sizeof kImageNetLabels / sizeof kImageNetLabels[0] == 1000, "ImageNet has 1000 classes");
}  // namespace

std::map<int, std::string> ImageNet::labels() {
  std::map<int, std::string> m;
  for (int i = 0; i < 1000; ++i) m.emplace_hint(m.end(), i, kImageNetLabels[i]);
  return m;
}

}  // namespace dezero::datasets
