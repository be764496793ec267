// Fashion-MNIST (Xiao et al. 2017): 70,000 grayscale 28x28 images of 10 clothing classes, 60,000
// for training and 10,000 for testing, stored as four gzip-compressed IDX files. Debian ships them
// in the package dataset-fashion-mnist (installed by scripts/setup.sh).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "experiments/data/image_dataset.h"

namespace batchlab::data {

// Where dataset-fashion-mnist installs the files.
inline constexpr const char* kFashionMnistDefaultDir = "/usr/share/datasets/fashion-mnist";

// The four file names inside the directory (each may also be present uncompressed, without ".gz").
inline constexpr const char* kFashionMnistTrainImages = "train-images-idx3-ubyte.gz";
inline constexpr const char* kFashionMnistTrainLabels = "train-labels-idx1-ubyte.gz";
inline constexpr const char* kFashionMnistTestImages = "t10k-images-idx3-ubyte.gz";
inline constexpr const char* kFashionMnistTestLabels = "t10k-labels-idx1-ubyte.gz";

// The 10 class names in label order (0 = "T-shirt/top" ... 9 = "Ankle boot").
const std::vector<std::string>& fashion_mnist_class_names();

// Reads the whole dataset from `dir` ("" = kFashionMnistDefaultDir): uint8 [60000, 1, 28, 28] and
// [10000, 1, 28, 28] images, int64 labels. Throws DataError when the directory or a file is missing
// (saying to install dataset-fashion-mnist or set data.path), when a file is malformed, when image
// and label counts disagree, when train and test image shapes differ, or when a label is outside
// 0..9.
ImageDataset load_fashion_mnist(const std::string& dir = "");

// The training images in `dir` ("" = kFashionMnistDefaultDir), from the label file's header alone;
// nullopt when it cannot be read (load_fashion_mnist then says why).
std::optional<int64_t> fashion_mnist_train_count(const std::string& dir = "");

}  // namespace batchlab::data
