// CIFAR-10 (Krizhevsky 2009) in its binary distribution (cifar-10-batches-bin): 50,000 training
// images in data_batch_1.bin .. data_batch_5.bin and 10,000 test images in test_batch.bin, each
// record one label byte and 3072 pixel bytes (1024 red, 1024 green, 1024 blue, rows of 32), plus
// batches.meta.txt with the class names one per line. No Debian package ships it: data.path must
// name the extracted directory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "experiments/data/image_dataset.h"

namespace batchlab::data {

inline constexpr int64_t kCifarSide = 32;
inline constexpr int64_t kCifarRecordBytes = 1 + 3 * kCifarSide * kCifarSide;  // 3073
inline constexpr int64_t kCifarTrainFiles = 5;

// The ten class names in label order (used when batches.meta.txt is absent).
const std::vector<std::string>& cifar10_class_names();

// Reads the records of one batch file: uint8 [N, 3, 32, 32] images and int64 [N] labels appended
// to `images` / `labels`. Throws DataError naming the file (and the record) when it is missing,
// truncated (size not a multiple of 3073 bytes: the last, partial record is named) or has a label
// outside 0..9.
void read_cifar10_file(const std::string& path, std::vector<torch::Tensor>& images,
                       std::vector<torch::Tensor>& labels);

// Reads the whole dataset from `dir`. Throws InputError when dir is empty (no default location) and
// DataError for missing or malformed files.
ImageDataset load_cifar10(const std::string& dir);

// The training images in `dir`, from the sizes of its batch files alone; nullopt when a file is
// missing or not a whole number of records (load_cifar10 then says why).
std::optional<int64_t> cifar10_train_count(const std::string& dir);

}  // namespace batchlab::data
