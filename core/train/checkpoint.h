// Checkpoints: everything needed to continue a run as if it had never stopped.
//
// File layout: "BLCKPT01" (8 bytes), payload length (8 bytes, little-endian), SHA-256 of the
// payload (32 bytes), payload (a LibTorch archive). Written to `NAME.tmp`, flushed, then renamed,
// so a crash leaves either the old file or the new one, never half of one; the checksum catches
// what a rename cannot (a truncated copy, a flipped bit). The two newest checkpoints are kept; when
// the newest is unreadable the previous one is used, with a warning; when none is, the run starts
// over from step 0 and says so (Trainer::resume, Trainer::started_over).
//
// Data-parallel runs: rank 0 writes the checkpoint (model and optimizer are identical on every
// rank); every other rank r writes `rank<r>-<step>.pt` beside it with its own RNG states (its
// dropout masks differ from rank 0's) and restores it on resume. Every rank reads the shared
// checkpoint, so the directory must be visible to all ranks (one host, or a shared filesystem).
//
// Beside them, runs with a validation split keep best.pt: the weights at the best validation
// metric so far (core/train/best_weights.h), which `batchlab export --checkpoint best` reads.
#pragma once

#include <c10/core/Device.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace batchlab::train {

// The trainer's own state beside model and optimizer.
struct TrainerState {
  int64_t step = 0;      // updates done
  double train_s = 0.0;  // training clock
  double eval_s = 0.0;   // evaluation time so far
  double checkpoint_s = 0.0;
  double first_loss = 0.0;  // divergence reference
  bool have_first_loss = false;
  std::vector<bool> targets_reached;
  double noise_g2 = 0.0;  // noise-scale EMA state
  double noise_trace = 0.0;
  int64_t noise_updates = 0;
  int64_t last_eval_step = -1;
};

struct CheckpointContents {
  std::string config_hash;  // the run id: a checkpoint of another configuration is refused
  TrainerState state;
};

// What best.pt records beside the weights: when they were best, by which metric.
struct BestRecord {
  int64_t step = 0;    // updates done
  std::string metric;  // val_acc or val_loss (core/train/best_weights.h)
  double value = 0.0;
};

class CheckpointStore {
 public:
  // `dir` is created when needed; `keep` newest files are kept.
  explicit CheckpointStore(std::string dir, int keep = 2);

  // The RNG states saved beside the CPU generator's: the default generator of this CUDA device
  // when training on one (CPU runs leave CUDA alone: no context is created for them).
  void set_device(const c10::Device& device) { device_ = device; }

  // Writes model parameters and buffers, optimizer state, the trainer state, the global RNG
  // states and the config hash. Returns the file written.
  std::string save(const CheckpointContents& contents, torch::nn::Module& model,
                   torch::optim::Optimizer& optimizer);

  // Loads the newest readable checkpoint into model and optimizer and returns its contents;
  // nullopt when there is none. A checkpoint whose config hash differs from `expected_hash` is a
  // CheckpointError, and so is an intact one of this run that does not fit it (a record missing,
  // tensors of other shapes, a trainer state no run can have): the model may be half-loaded by
  // then, so nothing older is tried. Unreadable files (a bad header or checksum, a payload that is
  // no archive) are skipped; their paths and reasons land in `warnings`,
  // each but the oldest naming the file tried next. With `at_most`, checkpoints past that step are
  // skipped too (with a warning): the run's records end there, and resuming later would leave the
  // steps between out of them.
  std::optional<CheckpointContents> load_latest(const std::string& expected_hash,
                                                torch::nn::Module& model,
                                                torch::optim::Optimizer& optimizer,
                                                std::vector<std::string>& warnings,
                                                std::optional<int64_t> at_most = std::nullopt);

  // This rank's RNG states at `step` (data-parallel ranks other than 0). Returns the file written.
  std::string save_rank_state(const std::string& config_hash, int64_t step, int64_t rank);

  // Restores this rank's RNG states saved at `step`; false (with the reason in `warnings`) when
  // the file is missing or unreadable, e.g. the rank died between rank 0's save and its own.
  bool load_rank_state(const std::string& config_hash, int64_t step, int64_t rank,
                       std::vector<std::string>& warnings);

  // best.pt: the model's parameters and buffers at the best validation metric so far, with the
  // metric, its value and the step (no optimizer or RNG state: it is for export, not resume).
  // Framed and renamed like a checkpoint; the trainer replaces it whenever the metric improves.
  std::string save_best(const std::string& config_hash, const BestRecord& record,
                        torch::nn::Module& model);
  // best.pt's record when the file exists, is intact and belongs to `config_hash`; else nullopt.
  std::optional<BestRecord> read_best(const std::string& config_hash) const;
  std::string best_path() const;

  // Checkpoint files, newest first.
  std::vector<std::string> list() const;
  const std::string& dir() const { return dir_; }

  // The step of a checkpoint file (ckpt-000000000120.pt -> 120).
  static int64_t step_of(const std::string& path);

 private:
  std::vector<std::string> list_rank_files(int64_t rank) const;

  std::string dir_;
  int keep_;
  c10::Device device_{c10::DeviceType::CPU};
};

// Reads only the model's parameters and buffers from a checkpoint file or best.pt of run
// `config_hash` into `model`; returns the step the file was written at. CheckpointError naming the
// file when it is unreadable, corrupt, or of another run.
int64_t load_model_weights(const std::string& path, const std::string& config_hash,
                           torch::nn::Module& model);

}  // namespace batchlab::train
