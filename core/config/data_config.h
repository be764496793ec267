// [data]: the data set, its splits and loading (experiment_config.h describes the config structs
// as a whole).
#pragma once

#include <cstdint>
#include <string>

namespace batchlab::config {

struct DataConfig {
  std::string dataset = "fashion_mnist";  // fashion_mnist | synthetic | cifar10 | imagenet | text
  std::string path;                       // "" = the dataset's default location
  int64_t workers = 0;                 // loader threads; 0 = batches built on the training thread
  int64_t seed = 0;                    // data-order seed; defaults to train.seed when absent
  bool augment = false;                // random crop (pad 2) and horizontal flip on training images
  int64_t train_size = 0;              // 0 = whole training set (synthetic: 4096)
  int64_t test_size = 0;               // 0 = whole test set (synthetic: 1024)
  int64_t eval_train_samples = 10000;  // fixed training sample measured in eval mode (the gap)
  // Examples of the training set held out for validation (0 = none): the first val_size positions
  // of a permutation drawn with a fixed seed from the training-set size alone, so every run, seed
  // and batch size validates on the same examples and trains on the rest. Selection (targets on
  // val_acc/val_loss, best LR) reads this split; test metrics are only reported.
  int64_t val_size = 0;
  // Images read from files (imagenet, packed shards): training crop side (random-resized-crop),
  // evaluation resize of the shorter side before the center crop, smallest crop area fraction, and
  // what a corrupt or truncated file does (false: the run stops with the file's path; true: it is
  // skipped and counted).
  int64_t image_size = 224;
  int64_t eval_resize = 256;
  double min_scale = 0.08;
  bool skip_corrupt = false;
  int64_t prefetch = 4;  // batches queued ahead by the loader threads
  // The synthetic data set's shape (generated in memory, experiments/data/synthetic_images.h):
  // channels x size x size images of `synthetic_classes` classes; 0 = its Fashion-MNIST-like
  // default (1 x 28 x 28, 10 classes). 3, 224 and 1000 give ImageNet's shape, so `train` can be
  // timed against `batchlab bench` on the same model and batch. Only with dataset = "synthetic".
  int64_t synthetic_channels = 0;
  int64_t synthetic_size = 0;
  int64_t synthetic_classes = 0;
  // Text (BERT pretraining): tokens per sequence; a second phase at seq_len_phase2 for the last
  // phase2_fraction of training (BERT and the LAMB paper: 128, then 512 for the last 10%; 0 = off);
  // MLM selection probability; sentence pairs with a next-sentence label; the SentencePiece model
  // ("" = <path>/tokenizer.model).
  int64_t seq_len = 128;
  int64_t seq_len_phase2 = 0;
  double phase2_fraction = 0.1;
  double mask_prob = 0.15;
  bool sentence_pair = false;
  std::string tokenizer;
  // The SHA-256 of the tokenizer's model file the run trained with. `train` writes it into the
  // run's recorded config (runs.config_toml) and leaves the run id as it was; when a config holds
  // it, a tokenizer file with other bytes is refused (a retrained tokenizer of the same size maps
  // text to ids the weights never saw): resuming, or `export --format hf`.
  std::string tokenizer_sha256;
};

}  // namespace batchlab::config
