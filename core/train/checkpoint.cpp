#include "core/train/checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <fmt/format.h>
#include <torch/serialize.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/atomic_file.h"
#include "core/config/sha256.h"
#include "core/errors.h"

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

// The archive inside a framed file, or a CheckpointError naming it.
void open_archive(const std::string& path, torch::serialize::InputArchive& archive) {
  const std::string payload = read_payload(path);
  std::istringstream in(payload);
  try {
    archive.load_from(in);
  } catch (const c10::Error& e) {
    throw CheckpointError(
        fmt::format("{}: unreadable checkpoint payload: {}", path, e.what_without_backtrace()));
  }
}

std::string config_hash_of(torch::serialize::InputArchive& archive) {
  c10::IValue hash;
  archive.read("config_hash", hash);
  return hash.toStringRef();
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
    c.config_hash = config_hash_of(archive);
    if (c.config_hash != expected_hash) {
      throw CheckpointError(fmt::format(
          "{}: checkpoint of run {} cannot resume run {} (the configuration differs); remove the "
          "checkpoint directory {} to start over",
          path, c.config_hash, expected_hash, dir_));
    }
    torch::serialize::InputArchive model_archive, optim_archive;
    archive.read("model", model_archive);
    archive.read("optimizer", optim_archive);
    model.load(model_archive);
    optimizer.load(optim_archive);

    torch::Tensor ints, dbl, reached;
    archive.read("ints", ints);
    archive.read("doubles", dbl);
    archive.read("targets_reached", reached);
    auto& s = c.state;
    s.step = ints[0].item<int64_t>();
    s.have_first_loss = ints[1].item<int64_t>() != 0;
    s.noise_updates = ints[2].item<int64_t>();
    s.last_eval_step = ints[3].item<int64_t>();
    s.train_s = dbl[0].item<double>();
    s.eval_s = dbl[1].item<double>();
    s.checkpoint_s = dbl[2].item<double>();
    s.first_loss = dbl[3].item<double>();
    s.noise_g2 = dbl[4].item<double>();
    s.noise_trace = dbl[5].item<double>();
    for (int64_t i = 0; i < reached.numel(); ++i)
      s.targets_reached.push_back(reached[i].item<int64_t>() != 0);
    read_rng(archive, device_);
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
  const std::string hash = config_hash_of(archive);
  if (hash != config_hash) {
    throw CheckpointError(
        fmt::format("{}: rank state of run {} cannot resume run {}", path, hash, config_hash));
  }
  read_rng(archive, device_);
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
    if (config_hash_of(archive) != config_hash) return std::nullopt;
    BestRecord record;
    torch::Tensor ints, value;
    c10::IValue metric;
    archive.read("ints", ints);
    archive.read("best_metric", metric);
    archive.read("best_value", value);
    record.step = ints[0].item<int64_t>();
    record.metric = metric.toStringRef();
    record.value = value[0].item<double>();
    return record;
  } catch (const CheckpointError&) {
    return std::nullopt;  // a damaged best.pt is replaced at the next improvement
  }
}

int64_t load_model_weights(const std::string& path, const std::string& config_hash,
                           torch::nn::Module& model) {
  torch::serialize::InputArchive archive;
  open_archive(path, archive);
  const std::string hash = config_hash_of(archive);
  if (hash != config_hash) {
    throw CheckpointError(
        fmt::format("{}: a checkpoint of run {}, not of run {} (the configuration differs)", path,
                    hash, config_hash));
  }
  torch::serialize::InputArchive model_archive;
  torch::Tensor ints;
  try {
    archive.read("model", model_archive);
    model.load(model_archive);
    archive.read("ints", ints);
  } catch (const c10::Error& e) {
    throw CheckpointError(fmt::format("{}: the weights do not fit run {}'s model: {}", path,
                                      config_hash, e.what_without_backtrace()));
  }
  return ints[0].item<int64_t>();
}

}  // namespace batchlab::train
