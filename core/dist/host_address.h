// Which address of this host the other ranks of a job can reach it at.
//
// Gloo's ranks connect to each other directly (a full mesh), each to the address its peer bound and
// published through rank 0's store. LibTorch's default device binds the address this host's name
// resolves to, which is often 127.0.0.1 (Debian's /etc/hosts; the namespaced test cluster, whose
// nodes share one hostname) or an address on a network the other hosts do not share: ranks on other
// hosts then cannot connect. batchlab binds instead the address of this host that routes to rank
// 0's host (MASTER_ADDR): the source address the kernel picks for a connection to it, which is on
// the network the job's hosts share. GLOO_SOCKET_IFNAME, as with torch, names an interface instead.
#pragma once

#include <functional>
#include <string>

#include "core/dist/rendezvous.h"

namespace batchlab::dist {

// True for names and addresses of the loopback: "localhost", 127.x.y.z, ::1.
bool is_loopback(const std::string& host);

// The numeric address this host would connect to `host`:`port` from. A UDP socket is connected
// (which only picks the route; nothing is sent) and asked for its own address. Throws InputError
// when `host` does not resolve, Error when no address of it can be routed to.
std::string local_address_towards(const std::string& host, int port);

// Where this rank's Gloo device listens.
struct GlooBinding {
  bool by_interface = false;  // `value` is an interface name (GLOO_SOCKET_IFNAME), else an address
  std::string value;
  std::string why;  // for the log: "the address of this host that routes to n1:20005"
};

// GLOO_SOCKET_IFNAME (read through `env`) when set; 127.0.0.1 when rank 0 is on the loopback
// (every rank on this host); otherwise `route_to(master_addr, master_port)` (local_address_towards
// outside tests).
GlooBinding gloo_binding(const Rendezvous& rendezvous, const EnvLookup& env,
                         const std::function<std::string(const std::string&, int)>& route_to);

}  // namespace batchlab::dist
