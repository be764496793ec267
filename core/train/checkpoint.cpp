#include "core/train/checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <fmt/format.h>
#include <torch/serialize.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <type_traits>

#include "core/atomic_file.h"
#include "core/config/sha256.h"
#include "core/errors.h"
#include "core/train/checkpoint_pickles.h"

namespace batchlab::train {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'B', 'L', 'C', 'K', 'P', 'T', '0', '1'};
constexpr size_t kHeader = 8 + 8 + 32;

torch::Tensor doubles(const std::vector<double>& v) { return torch::tensor(v, torch::kFloat64); }

std::string file_name(int64_t step) { return fmt::format("ckpt-{:012d}.pt", step); }
std::string rank_prefix(int64_t rank) { return fmt::format("rank{}-", rank); }
std::string rank_file_name(int64_t rank, int64_t step) {
  return fmt::format("{}{:012d}.pt", rank_prefix(rank), step);
}

// The global generators: the CPU one always, the training device's CUDA one when there is one.
void write_rng(torch::serialize::OutputArchive& archive, const c10::Device& device) {
  {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    archive.write("cpu_rng", gen.get_state());
  }
  if (device.is_cuda()) {
    auto gen = at::globalContext().defaultGenerator(device);
    std::lock_guard<std::mutex> lock(gen.mutex());
    archive.write("cuda_rng", gen.get_state());
  }
}

void read_rng(torch::serialize::InputArchive& archive, const c10::Device& device) {
  torch::Tensor rng;
  archive.read("cpu_rng", rng);
  {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(rng);
  }
  // A CPU checkpoint resumed on a GPU (or the reverse) keeps the device generator as seeded.
  torch::Tensor cuda_rng;
  if (device.is_cuda() && archive.try_read("cuda_rng", cuda_rng)) {
    auto gen = at::globalContext().defaultGenerator(device);
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(cuda_rng);
  }
}

// Header + checksum + payload, through a temporary file and a rename (core/atomic_file.h).
void write_framed(const std::string& final_path, const std::string& payload) {
  config::Sha256 sha;
  sha.update(payload);
  const auto digest = sha.digest();
  const uint64_t length = payload.size();
  write_file_atomically(
      final_path,
      {std::string_view(kMagic, 8),
       std::string_view(reinterpret_cast<const char*>(&length), sizeof length),
       std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()), payload});
}

std::string archive_bytes(torch::serialize::OutputArchive& archive) {
  std::ostringstream stream;
  archive.save_to(stream);
  return stream.str();
}

// Runs `read` over an archive whose checksum held. What it holds is still input (a file of
// another batchlab version, one written by hand, a best.pt renamed): LibTorch's errors for a
// missing record or a tensor of another shape or type (c10::Error, and torch::jit's own, such as
// ObjectAttributeError, which are plain std::runtime_errors) become a CheckpointError naming the
// file and what was being read (exit 2), not an internal error. batchlab's own errors and
// std::bad_alloc pass as they are.
template <typename Read>
auto reading(const std::string& path, std::string_view what, Read&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const c10::Error& e) {
    throw CheckpointError(fmt::format("{}: {}: {}", path, what, e.what_without_backtrace()));
  } catch (const std::exception& e) {
    throw CheckpointError(fmt::format("{}: {}: {}", path, what, e.what()));
  }
}

// Reads and verifies one file; throws CheckpointError naming the file and the problem.
std::string read_payload(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CheckpointError(fmt::format("{}: cannot open checkpoint", path));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < kHeader || std::memcmp(bytes.data(), kMagic, 8) != 0) {
    throw CheckpointError(fmt::format("{}: not a batchlab checkpoint (bad header)", path));
  }
  uint64_t length = 0;
  std::memcpy(&length, bytes.data() + 8, 8);
  if (bytes.size() - kHeader != length) {
    throw CheckpointError(fmt::format("{}: truncated checkpoint ({} payload bytes, expected {})",
                                      path, bytes.size() - kHeader, length));
  }
  std::string payload = bytes.substr(kHeader);
  config::Sha256 sha;
  sha.update(payload);
  const auto digest = sha.digest();
  if (std::memcmp(digest.data(), bytes.data() + 16, 32) != 0) {
    throw CheckpointError(fmt::format("{}: checksum mismatch (corrupted checkpoint)", path));
  }
  return payload;
}

// The archive inside a framed file, or a CheckpointError naming it. Its pickles are walked first
// (core/train/checkpoint_pickles.h): LibTorch allocates what they declare before checking it.
void open_archive(const std::string& path, torch::serialize::InputArchive& archive) {
  const std::string payload = read_payload(path);
  check_checkpoint_pickles(payload, path);
  std::istringstream in(payload);
  reading(path, "unreadable checkpoint payload", [&] { archive.load_from(in); });
}

std::string config_hash_of(torch::serialize::InputArchive& archive, const std::string& path) {
  return reading(path, "reading its run id (config_hash)", [&] {
    c10::IValue hash;
    archive.read("config_hash", hash);
    if (!hash.isString()) {
      throw std::invalid_argument(fmt::format("a {} where a string was written", hash.tagKind()));
    }
    return hash.toStringRef();
  });
}

// The values of record `key` as int64 (doubles: as double), at least `n` of them. Its errors, and
// read_state's, are std::invalid_argument without the file's name: `reading` adds it.
template <typename T>
std::vector<T> values_of(torch::serialize::InputArchive& archive, const std::string& key,
                         int64_t n) {
  torch::Tensor t;
  archive.read(key, t);
  t = t.reshape({-1}).to(std::is_same_v<T, double> ? torch::kFloat64 : torch::kInt64).contiguous();
  if (t.numel() < n) {
    throw std::invalid_argument(
        fmt::format("record {} holds {} values, expected at least {}", key, t.numel(), n));
  }
  const T* data = t.data_ptr<T>();
  return std::vector<T>(data, data + t.numel());
}

// The trainer's state as save() wrote it; a value no run can have (a negative step or clock, a
// clock that is not finite) is refused, since the trainer would index its data order with it.
TrainerState read_state(torch::serialize::InputArchive& archive) {
  const auto ints = values_of<int64_t>(archive, "ints", 4);
  const auto dbl = values_of<double>(archive, "doubles", 6);
  TrainerState s;
  s.step = ints[0];
  s.have_first_loss = ints[1] != 0;
  s.noise_updates = ints[2];
  s.last_eval_step = ints[3];
  s.train_s = dbl[0];
  s.eval_s = dbl[1];
  s.checkpoint_s = dbl[2];
  s.first_loss = dbl[3];
  s.noise_g2 = dbl[4];
  s.noise_trace = dbl[5];
  const bool clocks_ok = std::isfinite(s.train_s) && std::isfinite(s.eval_s) &&
                         std::isfinite(s.checkpoint_s) && s.train_s >= 0 && s.eval_s >= 0 &&
                         s.checkpoint_s >= 0;
  if (s.step < 0 || s.noise_updates < 0 || s.last_eval_step < -1 || s.last_eval_step > s.step ||
      !clocks_ok) {
    throw std::invalid_argument(fmt::format(
        "a trainer state no run can have (step {}, last evaluation at {}, {} noise updates, "
        "clocks {} / {} / {} s)",
        s.step, s.last_eval_step, s.noise_updates, s.train_s, s.eval_s, s.checkpoint_s));
  }
  torch::Tensor reached;
  archive.read("targets_reached", reached);
  reached = reached.reshape({-1}).to(torch::kInt64).contiguous();
  for (int64_t i = 0; i < reached.numel(); ++i)
    s.targets_reached.push_back(reached.data_ptr<int64_t>()[i] != 0);
  return s;
}

constexpr const char* kBestFile = "best.pt";

}  // namespace

CheckpointStore::CheckpointStore(std::string dir, int keep) : dir_(std::move(dir)), keep_(keep) {}

std::vector<std::string> CheckpointStore::list() const {
  std::vector<std::string> files;
  std::error_code ec;
  if (!fs::is_directory(dir_, ec)) return files;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const auto name = entry.path().filename().string();
    if (name.rfind("ckpt-", 0) == 0 && entry.path().extension() == ".pt") {
      files.push_back(entry.path().string());
    }
  }
  // Zero-padded step numbers: lexical order is step order.
  std::sort(files.rbegin(), files.rend());
  return files;
}

std::string CheckpointStore::save(const CheckpointContents& contents, torch::nn::Module& model,
                                  torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive archive;
  torch::serialize::OutputArchive model_archive, optim_archive;
  model.save(model_archive);
  optimizer.save(optim_archive);
  archive.write("model", model_archive);
  archive.write("optimizer", optim_archive);

  const auto& s = contents.state;
  archive.write("config_hash", c10::IValue(contents.config_hash));
  archive.write("ints", torch::tensor(std::vector<int64_t>{s.step, s.have_first_loss ? 1 : 0,
                                                           s.noise_updates, s.last_eval_step},
                                      torch::kInt64));
  archive.write("doubles", doubles({s.train_s, s.eval_s, s.checkpoint_s, s.first_loss, s.noise_g2,
                                    s.noise_trace}));
  std::vector<int64_t> reached(s.targets_reached.begin(), s.targets_reached.end());
  archive.write("targets_reached", torch::tensor(reached, torch::kInt64));
  write_rng(archive, device_);

  fs::create_directories(dir_);
  const std::string final_path = (fs::path(dir_) / file_name(s.step)).string();
  write_framed(final_path, archive_bytes(archive));

  auto files = list();
  for (size_t i = static_cast<size_t>(keep_); i < files.size(); ++i) {
    std::error_code ec;
    fs::remove(files[i], ec);
  }
  return final_path;
}

std::optional<CheckpointContents> CheckpointStore::load_latest(const std::string& expected_hash,
                                                               torch::nn::Module& model,
                                                               torch::optim::Optimizer& optimizer,
                                                               std::vector<std::string>& warnings,
                                                               std::optional<int64_t> at_most) {
  const auto files = list();
  for (size_t f = 0; f < files.size(); ++f) {
    const std::string& path = files[f];
    if (at_most && step_of(path) > *at_most) {
      warnings.push_back(fmt::format(
          "{}: not resumed from: the run's records end at step {}, so the steps up to {} would "
          "be missing from them (they were lost with the host that trained them); an older "
          "checkpoint, or the start, is used",
          path, *at_most, step_of(path)));
      continue;
    }
    torch::serialize::InputArchive archive;
    try {
      open_archive(path, archive);
    } catch (const CheckpointError& e) {
      // The oldest has nothing to fall back to: the caller says what happens then.
      warnings.push_back(f + 1 < files.size()
                             ? fmt::format("{}; falling back to {}", e.what(),
                                           fs::path(files[f + 1]).filename().string())
                             : std::string(e.what()));
      continue;
    }

    CheckpointContents c;
    c.config_hash = config_hash_of(archive, path);
    if (c.config_hash != expected_hash) {
      throw CheckpointError(fmt::format(
          "{}: checkpoint of run {} cannot resume run {} (the configuration differs); remove the "
          "checkpoint directory {} to start over",
          path, c.config_hash, expected_hash, dir_));
    }
    // Intact (the checksum held) and of this run, but not what this run can resume from: refused
    // rather than skipped, since the model and optimizer may be loaded half-way by then and an
    // older checkpoint, or a start from step 0, would continue from that mixture.
    reading(path,
            fmt::format("does not fit run {} (remove the checkpoint directory {} to start over)",
                        expected_hash, dir_),
            [&] {
              c.state = read_state(archive);
              torch::serialize::InputArchive model_archive, optim_archive;
              archive.read("model", model_archive);
              archive.read("optimizer", optim_archive);
              model.load(model_archive);
              optimizer.load(optim_archive);
              read_rng(archive, device_);
            });
    return c;
  }
  return std::nullopt;
}

std::vector<std::string> CheckpointStore::list_rank_files(int64_t rank) const {
  std::vector<std::string> files;
  std::error_code ec;
  if (!fs::is_directory(dir_, ec)) return files;
  const auto prefix = rank_prefix(rank);
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const auto name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && entry.path().extension() == ".pt") {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.rbegin(), files.rend());
  return files;
}

std::string CheckpointStore::save_rank_state(const std::string& config_hash, int64_t step,
                                             int64_t rank) {
  torch::serialize::OutputArchive archive;
  archive.write("config_hash", c10::IValue(config_hash));
  archive.write("step", torch::tensor(std::vector<int64_t>{step, rank}, torch::kInt64));
  write_rng(archive, device_);
  fs::create_directories(dir_);
  const std::string path = (fs::path(dir_) / rank_file_name(rank, step)).string();
  write_framed(path, archive_bytes(archive));
  auto files = list_rank_files(rank);
  for (size_t i = static_cast<size_t>(keep_); i < files.size(); ++i) {
    std::error_code ec;
    fs::remove(files[i], ec);
  }
  return path;
}

bool CheckpointStore::load_rank_state(const std::string& config_hash, int64_t step, int64_t rank,
                                      std::vector<std::string>& warnings) {
  const std::string path = (fs::path(dir_) / rank_file_name(rank, step)).string();
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    warnings.push_back(
        fmt::format("{}: missing; rank {} continues with a fresh RNG stream", path, rank));
    return false;
  }
  torch::serialize::InputArchive archive;
  try {
    open_archive(path, archive);
  } catch (const CheckpointError& e) {
    warnings.push_back(
        fmt::format("{}; rank {} continues with a fresh RNG stream", e.what(), rank));
    return false;
  }
  const std::string hash = config_hash_of(archive, path);
  if (hash != config_hash) {
    throw CheckpointError(
        fmt::format("{}: rank state of run {} cannot resume run {}", path, hash, config_hash));
  }
  try {
    reading(path, "restoring its RNG states", [&] { read_rng(archive, device_); });
  } catch (const CheckpointError& e) {
    warnings.push_back(
        fmt::format("{}; rank {} continues with a fresh RNG stream", e.what(), rank));
    return false;
  }
  return true;
}

int64_t CheckpointStore::step_of(const std::string& path) {
  const std::string name = fs::path(path).stem().string();  // ckpt-000000000120
  const size_t dash = name.rfind('-');
  return dash == std::string::npos ? -1 : std::stoll(name.substr(dash + 1));
}

std::string CheckpointStore::best_path() const { return (fs::path(dir_) / kBestFile).string(); }

std::string CheckpointStore::save_best(const std::string& config_hash, const BestRecord& record,
                                       torch::nn::Module& model) {
  torch::serialize::OutputArchive archive;
  torch::serialize::OutputArchive model_archive;
  model.save(model_archive);
  archive.write("model", model_archive);
  archive.write("config_hash", c10::IValue(config_hash));
  // "ints"[0] is the step, as in a checkpoint, so load_model_weights reads both alike.
  archive.write("ints", torch::tensor(std::vector<int64_t>{record.step}, torch::kInt64));
  archive.write("best_metric", c10::IValue(record.metric));
  archive.write("best_value", torch::tensor(std::vector<double>{record.value}, torch::kFloat64));
  fs::create_directories(dir_);
  write_framed(best_path(), archive_bytes(archive));
  return best_path();
}

std::optional<BestRecord> CheckpointStore::read_best(const std::string& config_hash) const {
  std::error_code ec;
  if (!fs::exists(best_path(), ec)) return std::nullopt;
  try {
    torch::serialize::InputArchive archive;
    open_archive(best_path(), archive);
    if (config_hash_of(archive, best_path()) != config_hash) return std::nullopt;
    return reading(best_path(), "reading its record", [&] {
      BestRecord record;
      c10::IValue metric;
      archive.read("best_metric", metric);
      if (!metric.isString()) throw std::invalid_argument("best_metric is not a string");
      record.step = values_of<int64_t>(archive, "ints", 1)[0];
      record.metric = metric.toStringRef();
      record.value = values_of<double>(archive, "best_value", 1)[0];
      return record;
    });
  } catch (const CheckpointError&) {
    return std::nullopt;  // a damaged best.pt is replaced at the next improvement
  }
}

int64_t load_model_weights(const std::string& path, const std::string& config_hash,
                           torch::nn::Module& model) {
  torch::serialize::InputArchive archive;
  open_archive(path, archive);
  const std::string hash = config_hash_of(archive, path);
  if (hash != config_hash) {
    throw CheckpointError(
        fmt::format("{}: a checkpoint of run {}, not of run {} (the configuration differs)", path,
                    hash, config_hash));
  }
  return reading(path, fmt::format("the weights do not fit run {}'s model", config_hash), [&] {
    const int64_t step = values_of<int64_t>(archive, "ints", 1)[0];
    torch::serialize::InputArchive model_archive;
    archive.read("model", model_archive);
    model.load(model_archive);
    return step;
  });
}

}  // namespace batchlab::train
