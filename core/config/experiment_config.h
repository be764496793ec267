// Typed experiment configuration: the contract between the TOML at the edge and the components.
// Each component receives only its own struct. Every field here is resolved: the loader
// (core/config/loader.h) fills optimizer-dependent defaults, so canonical TOML and the run id
// always see concrete values. Keys and meanings follow ../shared/DESIGN.md "Configuration".
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace batchlab::config {

inline constexpr int64_t kSchemaVersion = 1;

struct ModelConfig {
  std::string arch = "small_resnet";  // name in the models table (models/registry.h)
  int64_t width = 32;                 // base channel count of the small CNNs
  int64_t num_classes = 0;            // 0: taken from the dataset
  bool zero_init_residual = false;    // last BN gamma of each residual block at 0 (Goyal et al.)
  // ResNet stem: "imagenet" (7x7 stride-2 conv + max pool), "small" (3x3 stride-1 conv, no pool:
  // 28x28 and 32x32 inputs), "auto" (small when the input side is at most 64 pixels).
  std::string stem = "auto";
  bool channels_last = true;  // ResNets on CUDA: NHWC memory format (ignored on CPU)
  // BERT family (ignored by image models).
  int64_t vocab_size =
      30522;  // token vocabulary (BERT's WordPiece size; the tokenizer's when trained)
  int64_t max_seq_len = 512;   // position embeddings
  bool norm_first = false;     // pre-LN blocks (Cramming) instead of post-LN (original BERT)
  bool next_sentence = false;  // next-sentence-prediction head on the pooled [CLS] output
  double dropout = 0.1;        // hidden and attention dropout (Cramming uses 0)
};

struct DataConfig {
  std::string dataset = "fashion_mnist";  // fashion_mnist | synthetic | cifar10 | imagenet | text
  std::string path;                       // "" = the dataset's default location
  int64_t workers = 0;                 // loader threads; 0 = batches built on the training thread
  int64_t seed = 0;                    // data-order seed; defaults to train.seed when absent
  bool augment = false;                // random crop (pad 2) and horizontal flip on training images
  int64_t train_size = 0;              // 0 = whole training set (synthetic: 4096)
  int64_t test_size = 0;               // 0 = whole test set (synthetic: 1024)
  int64_t eval_train_samples = 10000;  // fixed training sample measured in eval mode (the gap)
  // Images read from files (imagenet, packed shards): training crop side (random-resized-crop),
  // evaluation resize of the shorter side before the center crop, smallest crop area fraction, and
  // what a corrupt or truncated file does (false: the run stops with the file's path; true: it is
  // skipped and counted).
  int64_t image_size = 224;
  int64_t eval_resize = 256;
  double min_scale = 0.08;
  bool skip_corrupt = false;
  int64_t prefetch = 4;  // batches queued ahead by the loader threads
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
};

struct BatchConfig {
  int64_t global = 0;    // the swept batch size: world x micro x accumulation
  int64_t micro = 0;     // per device per forward; 0 = global / world (no accumulation)
  int64_t bn_group = 0;  // ghost batch-norm group; 0 = whole micro-batch
};

// One ordered parameter-group rule; the first rule whose pattern matches a parameter's name wins.
// Pattern: a glob over the parameter name (`*`, `?`), or `ndim<2` for every parameter with fewer
// than two dimensions (biases and normalization scales/shifts).
struct ParamGroupRule {
  std::string match;
  std::optional<double> weight_decay;  // unset: optim.weight_decay
  std::optional<bool> adapt;           // trust-ratio adaptation (LARS/LAMB); unset: true
  double lr_scale = 1.0;
};

struct OptimConfig {
  std::string name = "sgd";  // sgd | nesterov | adam | adamw | lars | lamb
  double base_lr = 0.1;
  int64_t base_batch = 256;
  std::string scaling = "none";  // none | linear | sqrt
  double momentum = 0.9;
  bool nesterov = false;  // LARS; optimizer `nesterov` implies it
  std::array<double, 2> betas = {0.9, 0.999};
  double eps = 1e-8;  // resolved: 1e-6 for lamb when absent, 1e-8 otherwise
  double weight_decay = 0.0;
  double trust_coefficient = 0.001;
  bool trust_clip = false;
  bool always_adapt = false;
  bool lr_in_momentum = false;  // LARS: LR inside the momentum buffer (paper, MLPerf) or outside
  bool bias_correction = true;  // LAMB/Adam
  bool grad_averaging = true;   // LAMB
  double grad_clip = 0.0;  // global-norm clipping; resolved: 1.0 for lamb when absent, else 0 (off)
  // Parameters kept out of weight decay and trust-ratio adaptation (unless always_adapt).
  std::vector<std::string> exclude = {"ndim<2"};
  std::vector<ParamGroupRule> groups;  // [[optim.groups]], applied before `exclude`
};

struct ScheduleConfig {
  // Warmup: at most one of the three.
  std::optional<double> warmup_epochs;
  std::optional<int64_t> warmup_steps;
  std::optional<double> warmup_fraction;
  double warmup_start = 0.0;       // LR at step 0 as a fraction of the peak
  std::string decay = "constant";  // constant | linear | poly | cosine | step
  double power = 2.0;              // poly
  double end_lr = 0.0;             // linear, poly, cosine: final LR (absolute)
  std::vector<double> milestones;  // step: epochs at which the LR is multiplied by gamma
  double gamma = 0.1;
  // Length: exactly one of the three.
  std::optional<double> epochs;
  std::optional<int64_t> steps;
  std::optional<double>
      budget_s;  // wall-clock budget ("2h", "90m", "45s"); progress = time fraction
};

struct Target {
  std::string
      metric;  // test_acc | test_loss | train_acc | train_loss (losses are reached from above)
  double value = 0.0;
};

struct TrainConfig {
  int64_t seed = 0;
  std::string precision = "fp32";  // fp32 | bf16
  std::string device = "cpu";
  int64_t threads = 0;      // intra-op threads; 0 = hardware concurrency
  double eval_every = 1.0;  // epochs between evaluations (fractions allowed)
  int64_t log_every = 1;    // steps between rows of the steps table
  int64_t layer_stats_every = 0;
  bool noise_scale = false;
  std::vector<Target> targets;  // `target = {metric, value}` or `target = [{...}, ...]`
  bool stop_at_target = false;
  int64_t checkpoint_every = 0;     // steps; 0 = off
  double checkpoint_minutes = 0.0;  // also after this much wall time; 0 = off
  double divergence = 10.0;  // loss above this factor of its first value ends the run; 0 = off
  // Data parallelism (world size > 1): c10d backend ("auto" = nccl on CUDA when built with it, gloo
  // otherwise), the collective timeout after which a missing rank ends the job, and the gradient
  // all-reduce bucket size.
  std::string dist_backend = "auto";
  double dist_timeout_s = 300.0;
  double bucket_mb = 25.0;
};

struct ExperimentConfig {
  int64_t schema_version = kSchemaVersion;
  ModelConfig model;
  DataConfig data;
  BatchConfig batch;
  OptimConfig optim;
  ScheduleConfig schedule;
  TrainConfig train;
};

}  // namespace batchlab::config
