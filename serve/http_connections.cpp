#include "serve/http_connections.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

namespace batchlab::serve {

namespace {

using Clock = std::chrono::steady_clock;

thread_local bool t_close_after_request = false;
thread_local bool t_refuse_connection = false;

// One connection's bytes: a buffer that lives as long as the connection (so the bytes of a
// pipelined request read together with the one before it are still there for it), reads that give
// up at the request's deadline or when the server stops, writes that give up at the write timeout.
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(int fd, int wake_fd, const ConnectionLimits& limits)
      : fd_(fd), wake_fd_(wake_fd), limits_(limits) {}

  // True when a request's first bytes are buffered or arrive (or the peer closes) in time.
  bool wait_for_request(int timeout_ms) {
    if (pos_ < len_) return true;
    return wait(POLLIN, Clock::now() + std::chrono::milliseconds(timeout_ms));
  }

  void begin_request() {
    deadline_ = Clock::now() + std::chrono::milliseconds(limits_.request_timeout_ms);
    head_bytes_ = 0;
  }

  bool is_readable() const override { return pos_ < len_ || wait(POLLIN, deadline_); }

  bool is_writable() const override {
    return wait(POLLOUT, Clock::now() + std::chrono::milliseconds(limits_.write_timeout_ms));
  }

  ssize_t read(char* ptr, size_t size) override {
    if (pos_ == len_) {
      if (head_bytes_ >= limits_.max_request_head) return -1;
      for (;;) {
        const ssize_t n = ::recv(fd_, buffer_.data(), buffer_.size(), 0);
        if (n > 0) {
          pos_ = 0;
          len_ = static_cast<std::size_t>(n);
          break;
        }
        if (n == 0) return 0;
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
        if (!wait(POLLIN, deadline_)) return -1;
      }
    }
    const std::size_t k = std::min(size, len_ - pos_);
    std::memcpy(ptr, buffer_.data() + pos_, k);
    pos_ += k;
    head_bytes_ += k;
    return static_cast<ssize_t>(k);
  }

  ssize_t write(const char* ptr, size_t size) override {
    const auto deadline = Clock::now() + std::chrono::milliseconds(limits_.write_timeout_ms);
    std::size_t sent = 0;
    while (sent < size) {
      const ssize_t n = ::send(fd_, ptr + sent, size - sent, MSG_NOSIGNAL);
      if (n > 0) {
        sent += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && wait(POLLOUT, deadline)) continue;
      return -1;
    }
    return static_cast<ssize_t>(size);
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
      name(addr, len, ip, port);
  }

  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
      name(addr, len, ip, port);
  }

  socket_t socket() const override { return fd_; }

 private:
  static void name(const sockaddr_storage& addr, socklen_t len, std::string& ip, int& port) {
    std::array<char, NI_MAXHOST> host{};
    std::array<char, NI_MAXSERV> serv{};
    if (::getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, host.data(), host.size(),
                      serv.data(), serv.size(), NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
      ip = host.data();
      port = std::atoi(serv.data());
    }
  }

  // Waits for `events` on the socket until `deadline`; false on timeout or when the server stops.
  bool wait(short events, Clock::time_point deadline) const {
    for (;;) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return false;
      pollfd fds[2] = {{fd_, events, 0}, {wake_fd_, POLLIN, 0}};
      const int n = ::poll(fds, 2, static_cast<int>(std::min<long long>(left.count(), 60000)));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return false;
      if (fds[1].revents != 0) return false;
      if (fds[0].revents != 0) return true;  // ready, closed or failed: the call says which
    }
  }

  int fd_;
  int wake_fd_;
  const ConnectionLimits& limits_;
  std::array<char, 16384> buffer_{};
  std::size_t pos_ = 0, len_ = 0;
  Clock::time_point deadline_ = Clock::now();
  std::size_t head_bytes_ = 0;
};

// Sends what the peer may still read, then closes: FIN first, then a short wait for the peer's
// own close, so an answer is not cut off by a reset for bytes the server never read.
void close_gently(int fd, int wake_fd) {
  ::shutdown(fd, SHUT_WR);
  const auto deadline = Clock::now() + std::chrono::milliseconds(200);
  std::array<char, 4096> sink{};
  std::size_t drained = 0;
  while (drained < (1u << 20)) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    pollfd fds[2] = {{fd, POLLIN, 0}, {wake_fd, POLLIN, 0}};
    if (::poll(fds, 2, static_cast<int>(left.count())) <= 0 || fds[1].revents != 0) break;
    const ssize_t n = ::recv(fd, sink.data(), sink.size(), MSG_DONTWAIT);
    if (n <= 0) break;
    drained += static_cast<std::size_t>(n);
  }
  ::close(fd);
}

void refuse_busy(int fd) {
  const std::string body =
      R"({"error": "the dashboard has as many connections open as it serves at once; retry in a moment"})";
  const std::string answer = fmt::format(
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\n"
      "Content-Length: {}\r\nRetry-After: 1\r\nCache-Control: no-store\r\nConnection: close\r\n"
      "\r\n{}",
      body.size(), body);
  [[maybe_unused]] const ssize_t n =
      ::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::shutdown(fd, SHUT_WR);
  ::close(fd);
}

}  // namespace

// cpp-httplib hands every accepted socket to its task queue; this one runs each connection on a
// thread of its own, at most max_connections at once.
class ConnectionQueue : public httplib::TaskQueue {
 public:
  explicit ConnectionQueue(BoundedHttpServer& server) : server_(server) {}
  ~ConnectionQueue() override = default;

  void enqueue(std::function<void()> fn) override {
    std::unique_lock<std::mutex> lock(mutex_);
    const std::size_t max = static_cast<std::size_t>(std::max(1, server_.limits_.max_connections));
    const std::size_t open = running_ + jobs_.size();
    if (open >= max && !server_.evict_idle_connection()) {
      // Every slot holds a connection with a request under way: refuse this one at once, on the
      // accepting thread (it sends a canned 503 without reading anything).
      lock.unlock();
      t_refuse_connection = true;
      fn();
      t_refuse_connection = false;
      return;
    }
    jobs_.push_back(std::move(fn));
    if (idle_threads_ < jobs_.size() && threads_.size() < max) {
      threads_.emplace_back([this] { work(); });
    }
    cv_.notify_one();
  }

  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      shutdown_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

 private:
  void work() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      ++idle_threads_;
      cv_.wait(lock, [&] { return shutdown_ || !jobs_.empty(); });
      --idle_threads_;
      if (jobs_.empty()) return;  // shut down with nothing left
      auto job = std::move(jobs_.front());
      jobs_.pop_front();
      ++running_;
      lock.unlock();
      job();
      lock.lock();
      --running_;
    }
  }

  BoundedHttpServer& server_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  std::size_t idle_threads_ = 0;
  std::size_t running_ = 0;  // connections being served
  bool shutdown_ = false;
};

BoundedHttpServer::BoundedHttpServer(ConnectionLimits limits) : limits_(limits) {
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  new_task_queue = [this] { return new ConnectionQueue(*this); };
  // SO_REUSEADDR (a restart binds while old connections linger in TIME_WAIT), never SO_REUSEPORT
  // (with it a second server binds the same port and the kernel splits requests between them).
  set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  // What the Keep-Alive header announces; the waiting itself is done here.
  set_keep_alive_timeout(std::max(1, limits_.idle_timeout_ms / 1000));
  set_keep_alive_max_count(
      static_cast<std::size_t>(std::max(1, limits_.max_requests_per_connection)));
}

BoundedHttpServer::~BoundedHttpServer() {
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void BoundedHttpServer::wake_all() {
  stopping_ = true;
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof one);
}

void BoundedHttpServer::close_after_this_request() { t_close_after_request = true; }

void BoundedHttpServer::widen_listen_backlog() {
  // listen() again on a listening socket only changes its backlog (the kernel caps it at
  // net.core.somaxconn).
  const socket_t sock = svr_sock_;
  if (sock != INVALID_SOCKET) ::listen(sock, 512);
}

bool BoundedHttpServer::evict_idle_connection() {
  std::lock_guard<std::mutex> lock(connections_mutex_);
  auto oldest = connections_.end();
  for (auto it = connections_.begin(); it != connections_.end(); ++it) {
    if (it->second.idle && !it->second.evicted &&
        (oldest == connections_.end() || it->second.idle_since < oldest->second.idle_since)) {
      oldest = it;
    }
  }
  if (oldest == connections_.end()) return false;
  oldest->second.evicted = true;
  // Its thread wakes with end-of-file and closes it; the fd stays its own until then.
  ::shutdown(oldest->first, SHUT_RDWR);
  return true;
}

void BoundedHttpServer::set_idle(int fd, bool idle) {
  std::lock_guard<std::mutex> lock(connections_mutex_);
  auto& c = connections_[fd];
  c.idle = idle;
  if (idle) c.idle_since = Clock::now();
}

bool BoundedHttpServer::process_and_close_socket(socket_t sock) {
  if (t_refuse_connection) {
    refuse_busy(sock);
    return true;
  }
  ::fcntl(sock, F_SETFL, ::fcntl(sock, F_GETFL) | O_NONBLOCK);
  int yes = 1;
  ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
  ConnectionStream stream(sock, wake_fd_, limits_);
  for (int served = 0; !stopping_; ++served) {
    set_idle(sock, true);
    if (!stream.wait_for_request(limits_.idle_timeout_ms)) break;
    set_idle(sock, false);
    {
      std::lock_guard<std::mutex> lock(connections_mutex_);
      if (connections_[sock].evicted) break;
    }
    stream.begin_request();
    t_close_after_request = false;
    const bool last = served + 1 >= limits_.max_requests_per_connection || stopping_;
    bool closed = false;
    const bool ok = process_request(stream, last, closed, nullptr);
    if (!ok || closed || last || t_close_after_request) break;
  }
  {
    std::lock_guard<std::mutex> lock(connections_mutex_);
    connections_.erase(sock);
  }
  close_gently(sock, wake_fd_);
  return true;
}

namespace {

// The inodes of the sockets listening on `port` (/proc/net/tcp and tcp6, state 0A).
std::vector<std::string> listening_inodes(int port) {
  std::vector<std::string> inodes;
  const std::string wanted = fmt::format(":{:04X}", port);
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode;
      if (state == "0A" && local.size() > 5 && local.compare(local.size() - 5, 5, wanted) == 0) {
        inodes.push_back(inode);
      }
    }
  }
  return inodes;
}

// "pid 123 (batchlab serve --db a.db)" for the process holding one of these socket inodes, when
// /proc lets this user see it.
std::string socket_owner(const std::vector<std::string>& inodes) {
  if (inodes.empty()) return {};
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return {};
  std::string found;
  while (dirent* entry = ::readdir(proc)) {
    const std::string pid = entry->d_name;
    if (pid.empty() || !std::all_of(pid.begin(), pid.end(), ::isdigit)) continue;
    const std::string fd_dir = "/proc/" + pid + "/fd";
    DIR* fds = ::opendir(fd_dir.c_str());
    if (fds == nullptr) continue;
    while (dirent* fd = ::readdir(fds)) {
      char target[64] = {};
      const std::string link = fd_dir + "/" + fd->d_name;
      const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
      if (n <= 0) continue;
      const std::string text(target, static_cast<std::size_t>(n));
      for (const auto& inode : inodes) {
        if (text == "socket:[" + inode + "]") found = pid;
      }
      if (!found.empty()) break;
    }
    ::closedir(fds);
    if (!found.empty()) break;
  }
  ::closedir(proc);
  if (found.empty()) return {};
  std::ifstream cmdline("/proc/" + found + "/cmdline", std::ios::binary);
  std::string command((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
  while (!command.empty() && command.back() == '\0') command.pop_back();
  std::replace(command.begin(), command.end(), '\0', ' ');
  if (command.size() > 120) command = command.substr(0, 117) + "...";
  return command.empty() ? fmt::format("pid {}", found)
                         : fmt::format("pid {} ({})", found, command);
}

}  // namespace

std::string bind_failure_reason(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
  if (rc != 0) {
    return fmt::format("'{}' is not an address of this machine ({})", host, ::gai_strerror(rc));
  }
  int error = 0;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      error = errno;
      continue;
    }
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    const int bound = ::bind(fd, a->ai_addr, a->ai_addrlen);
    error = bound == 0 ? 0 : errno;
    if (bound == 0 && ::listen(fd, 1) != 0) error = errno;
    ::close(fd);
    if (error != 0) break;
  }
  ::freeaddrinfo(found);
  std::string reason = "the port was in use a moment ago";
  if (error == EADDRINUSE) {
    reason = "address already in use";
    const std::string owner = socket_owner(listening_inodes(port));
    reason += owner.empty() ? " (by a process this user cannot see)" : " by " + owner;
  } else if (error != 0) {
    reason = std::strerror(error);
    std::transform(reason.begin(), reason.begin() + std::min<std::size_t>(1, reason.size()),
                   reason.begin(), ::tolower);
  }
  return reason;
}

}  // namespace batchlab::serve
