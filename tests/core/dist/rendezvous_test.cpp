#include "core/dist/rendezvous.h"

#include <gtest/gtest.h>

#include <map>

#include "core/errors.h"

namespace batchlab::dist {
namespace {

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::string error_of(std::map<std::string, std::string> vars) {
  try {
    rendezvous_from_env(env_of(std::move(vars)));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Rendezvous, NothingSetIsOneProcess) {
  auto r = rendezvous_from_env(env_of({}));
  EXPECT_FALSE(r.distributed());
  EXPECT_EQ(r.world_size, 1);
  EXPECT_EQ(r.rank, 0);
}

TEST(Rendezvous, TorchrunVariables) {
  auto r = rendezvous_from_env(env_of({{"RANK", "3"},
                                       {"WORLD_SIZE", "8"},
                                       {"LOCAL_RANK", "1"},
                                       {"LOCAL_WORLD_SIZE", "2"},
                                       {"MASTER_ADDR", "node7"},
                                       {"MASTER_PORT", "29500"}}));
  EXPECT_TRUE(r.distributed());
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.world_size, 8);
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_EQ(r.local_world_size, 2);
  EXPECT_EQ(r.master_addr, "node7");
  EXPECT_EQ(r.master_port, 29500);
  EXPECT_EQ(r.source, "RANK/WORLD_SIZE");
}

TEST(Rendezvous, SlurmVariablesWithDerivedMaster) {
  auto r = rendezvous_from_env(env_of({{"SLURM_PROCID", "5"},
                                       {"SLURM_NTASKS", "8"},
                                       {"SLURM_LOCALID", "1"},
                                       {"SLURM_NTASKS_PER_NODE", "4"},
                                       {"SLURM_JOB_NODELIST", "gpu[03-04,07]"},
                                       {"SLURM_JOB_ID", "123456"}}));
  EXPECT_EQ(r.rank, 5);
  EXPECT_EQ(r.world_size, 8);
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_EQ(r.local_world_size, 4);
  EXPECT_EQ(r.master_addr, "gpu03");
  EXPECT_EQ(r.master_port, 20000 + 123456 % 30000);
  EXPECT_EQ(r.source, "SLURM_PROCID/SLURM_NTASKS");
}

TEST(Rendezvous, SlurmTakesAnExplicitMaster) {
  auto r = rendezvous_from_env(env_of({{"SLURM_PROCID", "0"},
                                       {"SLURM_NTASKS", "2"},
                                       {"MASTER_ADDR", "10.0.0.1"},
                                       {"MASTER_PORT", "4000"}}));
  EXPECT_EQ(r.master_addr, "10.0.0.1");
  EXPECT_EQ(r.master_port, 4000);
}

TEST(Rendezvous, TorchrunVariablesWinInsideASlurmJob) {
  auto r = rendezvous_from_env(env_of({{"RANK", "1"},
                                       {"WORLD_SIZE", "2"},
                                       {"MASTER_ADDR", "a"},
                                       {"MASTER_PORT", "1234"},
                                       {"SLURM_PROCID", "0"},
                                       {"SLURM_NTASKS", "1"}}));
  EXPECT_EQ(r.rank, 1);
  EXPECT_EQ(r.world_size, 2);
}

TEST(Rendezvous, SlurmNodeLists) {
  EXPECT_EQ(first_slurm_host("node01"), "node01");
  EXPECT_EQ(first_slurm_host("a1,b2"), "a1");
  EXPECT_EQ(first_slurm_host("gpu[03-04,07],cpu1"), "gpu03");
  EXPECT_EQ(first_slurm_host("rack[2,5]-n[1-4]"), "rack2-n1");
}

TEST(Rendezvous, InconsistentEnvironmentsNameTheVariable) {
  EXPECT_NE(error_of({{"RANK", "0"}}).find("WORLD_SIZE"), std::string::npos);
  EXPECT_NE(error_of({{"WORLD_SIZE", "2"}}).find("RANK"), std::string::npos);
  EXPECT_NE(error_of({{"RANK", "2"}, {"WORLD_SIZE", "2"}}).find("RANK = 2"), std::string::npos);
  EXPECT_NE(error_of({{"RANK", "x"}, {"WORLD_SIZE", "2"}}).find("RANK = 'x'"), std::string::npos);
  EXPECT_NE(error_of({{"RANK", "0"}, {"WORLD_SIZE", "0"}}).find("WORLD_SIZE = 0"),
            std::string::npos);
  EXPECT_NE(
      error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}}).find("MASTER_ADDR"),
      std::string::npos);
  EXPECT_NE(
      error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}}).find("MASTER_PORT"),
      std::string::npos);
  EXPECT_NE(
      error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "70000"}})
          .find("MASTER_PORT = 70000"),
      std::string::npos);
  EXPECT_NE(error_of({{"RANK", "1"},
                      {"WORLD_SIZE", "2"},
                      {"LOCAL_RANK", "-1"},
                      {"MASTER_ADDR", "h"},
                      {"MASTER_PORT", "1"}})
                .find("LOCAL_RANK = -1"),
            std::string::npos);
  EXPECT_NE(error_of({{"RANK", "1"},
                      {"WORLD_SIZE", "2"},
                      {"LOCAL_RANK", "2"},
                      {"LOCAL_WORLD_SIZE", "2"},
                      {"MASTER_ADDR", "h"},
                      {"MASTER_PORT", "1"}})
                .find("LOCAL_RANK = 2"),
            std::string::npos);
  EXPECT_NE(error_of({{"SLURM_PROCID", "0"}}).find("SLURM_NTASKS"), std::string::npos);
  EXPECT_NE(error_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}}).find("MASTER_ADDR"),
            std::string::npos);
}

TEST(Rendezvous, OneRankNeedsNoMaster) {
  auto r = rendezvous_from_env(env_of({{"RANK", "0"}, {"WORLD_SIZE", "1"}}));
  EXPECT_FALSE(r.distributed());
}

}  // namespace
}  // namespace batchlab::dist
