#include "core/dist/host_address.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace batchlab::dist {
namespace {

EnvLookup fake_env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

Rendezvous rank_zero_at(const std::string& master) {
  Rendezvous r;
  r.world_size = 2;
  r.master_addr = master;
  r.master_port = 20005;
  return r;
}

// Records what it is asked and answers with a fixed address.
struct FakeRoute {
  std::vector<std::pair<std::string, int>> asked;
  std::function<std::string(const std::string&, int)> fn() {
    return [this](const std::string& host, int port) {
      asked.emplace_back(host, port);
      return std::string("198.18.0.12");
    };
  }
};

TEST(HostAddress, LoopbackNames) {
  EXPECT_TRUE(is_loopback("localhost"));
  EXPECT_TRUE(is_loopback("127.0.0.1"));
  EXPECT_TRUE(is_loopback("127.1.2.3"));
  EXPECT_TRUE(is_loopback("::1"));
  EXPECT_FALSE(is_loopback("n1"));
  EXPECT_FALSE(is_loopback("198.18.0.11"));
  EXPECT_FALSE(is_loopback("1270.0.0.1"));
}

TEST(HostAddress, RankZeroElsewhereBindsTheAddressThatRoutesToIt) {
  FakeRoute route;
  const auto b = gloo_binding(rank_zero_at("n1"), fake_env({}), route.fn());
  EXPECT_FALSE(b.by_interface);
  EXPECT_EQ(b.value, "198.18.0.12");
  ASSERT_EQ(route.asked.size(), 1u);
  EXPECT_EQ(route.asked[0].first, "n1");
  EXPECT_EQ(route.asked[0].second, 20005);
  EXPECT_NE(b.why.find("routes to rank 0's n1:20005"), std::string::npos) << b.why;
}

TEST(HostAddress, RankZeroOnTheLoopbackBindsTheLoopback) {
  FakeRoute route;
  const auto b = gloo_binding(rank_zero_at("127.0.0.1"), fake_env({}), route.fn());
  EXPECT_FALSE(b.by_interface);
  EXPECT_EQ(b.value, "127.0.0.1");
  EXPECT_TRUE(route.asked.empty());  // --nproc: nothing to look up
}

TEST(HostAddress, SocketInterfaceVariableWins) {
  FakeRoute route;
  const auto b =
      gloo_binding(rank_zero_at("n1"), fake_env({{"GLOO_SOCKET_IFNAME", "ib0"}}), route.fn());
  EXPECT_TRUE(b.by_interface);
  EXPECT_EQ(b.value, "ib0");
  EXPECT_TRUE(route.asked.empty());
  // Set but empty: as if unset (a job script's `export GLOO_SOCKET_IFNAME=`).
  const auto unset =
      gloo_binding(rank_zero_at("n1"), fake_env({{"GLOO_SOCKET_IFNAME", ""}}), route.fn());
  EXPECT_FALSE(unset.by_interface);
  EXPECT_EQ(unset.value, "198.18.0.12");
}

// The real lookup, on the loopback only (no name here needs a name server).
TEST(HostAddress, LocalAddressTowardsTheLoopback) {
  EXPECT_EQ(local_address_towards("127.0.0.1", 20005), "127.0.0.1");
  EXPECT_EQ(local_address_towards("127.0.0.2", 9), "127.0.0.1");
  const std::string local = local_address_towards("localhost", 20005);
  EXPECT_TRUE(local == "127.0.0.1" || local == "::1") << local;
}

}  // namespace
}  // namespace batchlab::dist
