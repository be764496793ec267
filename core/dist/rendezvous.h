// Where this process sits in a data-parallel job, read from the environment variables the usual
// launchers set, so batchlab runs unchanged under torchrun-style launchers, Slurm's srun and its
// own `batchlab train --nproc N`:
//   RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT   (torchrun, --nproc)
//   SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NTASKS_PER_NODE,
//   SLURM_JOB_NODELIST, SLURM_JOB_ID                                           (srun)
// The torchrun variables win when both are set (torchrun inside a Slurm allocation). Under Slurm,
// MASTER_ADDR defaults to the first host of the job's node list and MASTER_PORT to a port derived
// from the job id (the same on every task, different between jobs sharing a node). Neither set:
// one process. An inconsistent environment is an InputError naming the variable and the fix.
// Across hosts, rank 0's host name (the first of SLURM_JOB_NODELIST: srun puts rank 0 on the first
// node of the allocation) must resolve on every host of the job to an address the others can
// reach, as node names do on a cluster with working name service; where they do not (a NodeAddr
// that is not the node's name's address), export MASTER_ADDR in the job. Each rank's Gloo device
// then binds the address of its own host that routes to MASTER_ADDR (host_address.h).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace batchlab::dist {

struct Rendezvous {
  int64_t rank = 0;
  int64_t world_size = 1;
  int64_t local_rank = 0;        // index on this host: picks the GPU
  int64_t local_world_size = 1;  // ranks on this host: shares the CPU cores
  std::string master_addr;       // rank 0's host, which serves the TCP store
  int master_port = 0;
  std::string source = "single process";  // which variables it came from, for messages

  bool distributed() const { return world_size > 1; }
};

// A variable's value, or nullopt when unset (tests pass a map instead of the process environment).
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

Rendezvous rendezvous_from_env(const EnvLookup& env);

// A variable of this process's environment.
std::optional<std::string> process_env(const std::string& name);

// From this process's environment.
Rendezvous rendezvous_from_process_env();

// First host of a Slurm node list: "gpu[03-04,07],cpu1" -> "gpu03".
std::string first_slurm_host(const std::string& nodelist);

}  // namespace batchlab::dist
