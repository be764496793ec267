#include "core/dist/host_address.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <memory>

#include "core/errors.h"

namespace batchlab::dist {

namespace {

// Closes the socket however the lookup ends.
struct Socket {
  int fd = -1;
  ~Socket() {
    if (fd >= 0) ::close(fd);
  }
};

std::string numeric(const sockaddr* addr) {
  std::array<char, INET6_ADDRSTRLEN> text{};
  const void* raw =
      addr->sa_family == AF_INET6
          ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(addr)->sin6_addr)
          : static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(addr)->sin_addr);
  if (::inet_ntop(addr->sa_family, raw, text.data(), text.size()) == nullptr) return "";
  return text.data();
}

}  // namespace

bool is_loopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

std::string local_address_towards(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    throw InputError(fmt::format(
        "rank 0's host '{}' (MASTER_ADDR, or the first host of SLURM_JOB_NODELIST) does not "
        "resolve on this host: {}; export MASTER_ADDR as an address the ranks' hosts can reach",
        host, ::gai_strerror(rc)));
  }
  const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, &::freeaddrinfo);
  std::string last_error = "no address";
  // The first address of the host that this host has a route to.
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    Socket s;
    s.fd = ::socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s.fd < 0 || ::connect(s.fd, a->ai_addr, a->ai_addrlen) != 0) {
      last_error = fmt::format("{}: {}", numeric(a->ai_addr), std::strerror(errno));
      continue;
    }
    sockaddr_storage local{};
    socklen_t size = sizeof(local);
    if (::getsockname(s.fd, reinterpret_cast<sockaddr*>(&local), &size) != 0) {
      last_error = fmt::format("getsockname: {}", std::strerror(errno));
      continue;
    }
    if (std::string address = numeric(reinterpret_cast<const sockaddr*>(&local));
        !address.empty()) {
      return address;
    }
  }
  throw Error(
      fmt::format("no route from this host to rank 0's host '{}' ({}); set "
                  "GLOO_SOCKET_IFNAME to the interface of the network the ranks share",
                  host, last_error));
}

GlooBinding gloo_binding(const Rendezvous& rv, const EnvLookup& env,
                         const std::function<std::string(const std::string&, int)>& route_to) {
  GlooBinding b;
  if (const auto ifname = env("GLOO_SOCKET_IFNAME"); ifname && !ifname->empty()) {
    b.by_interface = true;
    b.value = *ifname;
    b.why = "GLOO_SOCKET_IFNAME";
  } else if (is_loopback(rv.master_addr)) {
    b.value = "127.0.0.1";
    b.why = fmt::format("rank 0 is on the loopback ({})", rv.master_addr);
  } else {
    b.value = route_to(rv.master_addr, rv.master_port);
    b.why = fmt::format("the address of this host that routes to rank 0's {}:{}", rv.master_addr,
                        rv.master_port);
  }
  return b;
}

}  // namespace batchlab::dist
