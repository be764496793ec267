#include "core/dist/rendezvous.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "core/errors.h"

namespace batchlab::dist {

namespace {

constexpr const char* kTorchrunFix =
    "set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT together (a torchrun-style launcher or "
    "`batchlab train --nproc N` does), or unset them for one process";

int64_t parse_int(const std::string& name, const std::string& value) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size()) {
    throw InputError(fmt::format("environment variable {} = '{}': not an integer", name, value));
  }
  return v;
}

std::optional<int64_t> int_var(const EnvLookup& env, const std::string& name) {
  auto v = env(name);
  if (!v) return std::nullopt;
  return parse_int(name, *v);
}

// "4" or "4(x2)" or "4,2": the leading count (this host's, for the usual homogeneous layouts).
std::optional<int64_t> leading_count(const std::optional<std::string>& v) {
  if (!v || v->empty() || !std::isdigit(static_cast<unsigned char>((*v)[0]))) return std::nullopt;
  return std::stoll(*v);
}

void check_rank(const Rendezvous& r, const std::string& rank_var, const std::string& world_var,
                const std::string& local_var) {
  if (r.world_size < 1) {
    throw InputError(
        fmt::format("environment variable {} = {}: must be at least 1", world_var, r.world_size));
  }
  if (r.rank < 0 || r.rank >= r.world_size) {
    throw InputError(fmt::format("environment variable {} = {} is not in [0, {} = {})", rank_var,
                                 r.rank, world_var, r.world_size));
  }
  if (r.local_rank < 0 || r.local_rank >= r.local_world_size) {
    throw InputError(
        fmt::format("environment variable {} = {}: must be in [0, {}) (the ranks on "
                    "this host)",
                    local_var, r.local_rank, r.local_world_size));
  }
}

int parse_port(const std::string& name, const std::string& value) {
  const int64_t p = parse_int(name, value);
  if (p < 1 || p > 65535) {
    throw InputError(
        fmt::format("environment variable {} = {}: not a TCP port (1-65535)", name, value));
  }
  return static_cast<int>(p);
}

Rendezvous from_torchrun(const EnvLookup& env) {
  const auto rank = env("RANK"), world = env("WORLD_SIZE");
  if (!rank || !world) {
    throw InputError(fmt::format("environment variable {} is set but {} is not: {}",
                                 rank ? "RANK" : "WORLD_SIZE", rank ? "WORLD_SIZE" : "RANK",
                                 kTorchrunFix));
  }
  Rendezvous r;
  r.source = "RANK/WORLD_SIZE";
  r.rank = parse_int("RANK", *rank);
  r.world_size = parse_int("WORLD_SIZE", *world);
  // Without LOCAL_RANK the ranks are taken to share one host, as with a single-node launcher.
  r.local_rank = int_var(env, "LOCAL_RANK").value_or(r.rank);
  r.local_world_size = int_var(env, "LOCAL_WORLD_SIZE").value_or(r.world_size);
  check_rank(r, "RANK", "WORLD_SIZE", "LOCAL_RANK");
  if (r.world_size == 1) return r;
  const auto addr = env("MASTER_ADDR"), port = env("MASTER_PORT");
  if (!addr || addr->empty()) {
    throw InputError(
        fmt::format("environment variable MASTER_ADDR is not set (WORLD_SIZE = {}): "
                    "the ranks need rank 0's host name or address; {}",
                    r.world_size, kTorchrunFix));
  }
  if (!port) {
    throw InputError(
        fmt::format("environment variable MASTER_PORT is not set (WORLD_SIZE = {}): "
                    "the ranks need the port of rank 0's store; {}",
                    r.world_size, kTorchrunFix));
  }
  r.master_addr = *addr;
  r.master_port = parse_port("MASTER_PORT", *port);
  return r;
}

Rendezvous from_slurm(const EnvLookup& env) {
  const auto procid = env("SLURM_PROCID"), ntasks = env("SLURM_NTASKS");
  if (!procid || !ntasks) {
    throw InputError(fmt::format(
        "environment variable {} is set but {} is not: run the ranks with srun (which sets both), "
        "or set RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT",
        procid ? "SLURM_PROCID" : "SLURM_NTASKS", procid ? "SLURM_NTASKS" : "SLURM_PROCID"));
  }
  Rendezvous r;
  r.source = "SLURM_PROCID/SLURM_NTASKS";
  r.rank = parse_int("SLURM_PROCID", *procid);
  r.world_size = parse_int("SLURM_NTASKS", *ntasks);
  r.local_rank = int_var(env, "SLURM_LOCALID").value_or(0);
  // Only the thread count depends on it: unknown, it is at least this task's local index + 1.
  r.local_world_size =
      std::max(leading_count(env("SLURM_NTASKS_PER_NODE"))
                   .value_or(leading_count(env("SLURM_TASKS_PER_NODE")).value_or(1)),
               r.local_rank + 1);
  check_rank(r, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID");
  if (r.world_size == 1) return r;
  if (auto addr = env("MASTER_ADDR"); addr && !addr->empty()) {
    r.master_addr = *addr;
  } else {
    auto nodes = env("SLURM_JOB_NODELIST");
    if (!nodes) nodes = env("SLURM_NODELIST");
    if (!nodes || nodes->empty()) {
      throw InputError(
          "neither MASTER_ADDR nor SLURM_JOB_NODELIST is set: the ranks cannot find "
          "rank 0's host; export MASTER_ADDR in the job script");
    }
    r.master_addr = first_slurm_host(*nodes);
  }
  if (auto port = env("MASTER_PORT")) {
    r.master_port = parse_port("MASTER_PORT", *port);
  } else if (auto job = env("SLURM_JOB_ID")) {
    r.master_port = static_cast<int>(20000 + parse_int("SLURM_JOB_ID", *job) % 30000);
  } else {
    throw InputError(
        "neither MASTER_PORT nor SLURM_JOB_ID is set: export MASTER_PORT in the job script");
  }
  return r;
}

}  // namespace

std::string first_slurm_host(const std::string& nodelist) {
  // The first entry ends at the first comma outside brackets.
  size_t end = 0;
  int depth = 0;
  for (; end < nodelist.size(); ++end) {
    if (nodelist[end] == '[') ++depth;
    if (nodelist[end] == ']') --depth;
    if (nodelist[end] == ',' && depth == 0) break;
  }
  const std::string first = nodelist.substr(0, end);
  const auto open = first.find('[');
  if (open == std::string::npos) return first;
  // "prefix[03-04,07]rest": the first number of the first range, then the rest the same way.
  const auto close = first.find(']', open);
  std::string inside =
      first.substr(open + 1, close == std::string::npos ? std::string::npos : close - open - 1);
  inside = inside.substr(0, inside.find_first_of(",-"));
  const std::string rest = close == std::string::npos ? "" : first.substr(close + 1);
  return first.substr(0, open) + inside + first_slurm_host(rest);
}

Rendezvous rendezvous_from_env(const EnvLookup& env) {
  if (env("RANK") || env("WORLD_SIZE")) return from_torchrun(env);
  if (env("SLURM_PROCID") || env("SLURM_NTASKS")) return from_slurm(env);
  return Rendezvous{};
}

std::optional<std::string> process_env(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

Rendezvous rendezvous_from_process_env() { return rendezvous_from_env(process_env); }

}  // namespace batchlab::dist
