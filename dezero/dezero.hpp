// dezero/dezero.hpp - everything (each header is also usable alone).
//
//   #include <dezero/dezero.hpp>
//   namespace F = dezero::F;
//   using dezero::Variable;
#pragma once

#include "dezero/core.hpp"
#include "dezero/cuda.hpp"
#include "dezero/dataloaders.hpp"
#include "dezero/datasets.hpp"
#include "dezero/device.hpp"
#include "dezero/download.hpp"
#include "dezero/dtype.hpp"
#include "dezero/error.hpp"
#include "dezero/functions.hpp"
#include "dezero/image.hpp"
#include "dezero/layers.hpp"
#include "dezero/models.hpp"
#include "dezero/npz.hpp"
#include "dezero/onednn.hpp"
#include "dezero/optimizers.hpp"
#include "dezero/shape.hpp"
#include "dezero/tensor.hpp"
#include "dezero/transforms.hpp"
#include "dezero/utils.hpp"
#include "dezero/version.hpp"
