#include "serve/server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <httplib.h>

#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "results/errors.h"
#include "serve/api_curves.h"
#include "serve/api_layers.h"
#include "serve/api_runs.h"
#include "serve/api_sweeps.h"
#include "serve/assets.h"
#include "serve/errors.h"
#include "serve/http_connections.h"
#include "serve/http_encoding.h"
#include "serve/request_params.h"

namespace batchlab::serve {

namespace {

using nlohmann::json;

// A GET carries no body; anything larger than this is refused before a handler sees it.
constexpr std::size_t kMaxBody = 1024;
constexpr std::size_t kMaxHeaders = 100;

// "localhost:8470" -> "localhost", "[::1]:8470" -> "::1", "127.0.0.1" -> "127.0.0.1".
std::string host_name(const std::string& header) {
  if (!header.empty() && header.front() == '[') {
    const auto close = header.find(']');
    return close == std::string::npos ? header : header.substr(1, close - 1);
  }
  const auto colon = header.find(':');
  return colon == std::string::npos ? header : header.substr(0, colon);
}

std::string lowercase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Answers smaller than this go out as they are: compressing them saves less than its headers.
constexpr std::size_t kCompressAbove = 1024;

void send_json(const httplib::Request& req, httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_header("Vary", "Accept-Encoding");
  // Invalid UTF-8 in a stored error text is replaced, not thrown on.
  std::string text = body.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > kCompressAbove && accepts_gzip(req.get_header_value("Accept-Encoding"))) {
    text = gzip(text, 1);
    res.set_header("Content-Encoding", "gzip");
  }
  // With the charset, cpp-httplib does not compress it again (serve/http_encoding.h).
  res.set_content(std::move(text), "application/json; charset=utf-8");
}

void send_error(const httplib::Request& req, httplib::Response& res, int status,
                const std::string& message, const std::string& param = {}) {
  json body = {{"error", message}};
  if (!param.empty()) body["param"] = param;
  send_json(req, res, status, body);
}

// A refusal before any handler ran: the request may have left bytes unread (a body, the rest of
// a malformed head), so the connection closes after the answer rather than parse them as the next
// request.
void refuse(const httplib::Request& req, httplib::Response& res, int status,
            const std::string& message) {
  send_error(req, res, status, message);
  res.set_header("Connection", "close");
  BoundedHttpServer::close_after_this_request();
}

// The answers cpp-httplib makes itself (a malformed or overlong request line, ...) say why in the
// JSON every other refusal has.
std::string reason_of(int status) {
  switch (status) {
    case 400:
      return "malformed request";
    case 404:
      return "no such page or endpoint";
    case 413:
      return "request body too large";
    case 414:
      return "request line longer than 8192 bytes";
    case 416:
      return "range not satisfiable";
    case 431:
      return "request headers too large";
    case 500:
      return "internal error";
    case 503:
      return "the dashboard is busy; retry in a moment";
    default:
      return fmt::format("request refused (HTTP {})", status);
  }
}

// A strong validator for the embedded assets, computed once (FNV-1a of the bytes).
std::string etag_of(const Asset& asset) {
  std::uint64_t h = 1469598103934665603ULL;
  for (const char c : asset.body) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return fmt::format("\"{:016x}\"", h);
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

bool is_loopback_host(const std::string& host) {
  const std::string h = lowercase(host);
  if (h == "localhost" || h == "::1") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  return false;
}

DashboardServer::DashboardServer(DashboardDb& db, ServeOptions options,
                                 std::function<void(const std::string&)> log)
    : db_(db),
      options_(std::move(options)),
      log_(std::move(log)),
      http_(std::make_unique<BoundedHttpServer>(options_.limits)) {
  if (!log_) log_ = [](const std::string& line) { std::cerr << line << std::endl; };
  install_routes();
}

DashboardServer::~DashboardServer() = default;

void DashboardServer::report_problem(const std::string& message) {
  // Once per distinct message: a page polling every 2 s must not flood the terminal.
  std::lock_guard<std::mutex> lock(log_mutex_);
  if (message == last_problem_) return;
  last_problem_ = message;
  if (!message.empty()) log_(fmt::format("batchlab serve: {}", message));
}

void DashboardServer::install_routes() {
  install_limits();
  install_request_checks();
  install_api();
  install_assets();
}

void DashboardServer::install_limits() {
  httplib::Server& http = *http_;
  http.set_payload_max_length(kMaxBody);
  // Headers and body leave in separate writes; without TCP_NODELAY a keep-alive client's delayed
  // ACK holds the second one back (~40 ms on Linux) on every small answer.
  http.set_tcp_nodelay(true);
  // Reads and writes wait through poll() on non-blocking sockets, with the timeouts of
  // options_.limits (serve/http_connections.h); these only set the accepted sockets' SO_RCVTIMEO.
  http.set_read_timeout(5, 0);
  http.set_write_timeout(10, 0);
  http.set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // ours
        refuse(req, res, res.status, reason_of(res.status));
        return httplib::Server::HandlerResponse::Handled;
      }));
  http.set_default_headers({{"Content-Security-Policy",
                             "default-src 'self'; style-src 'self' 'unsafe-inline'; "
                             "img-src 'self' data:; frame-ancestors 'none'"},
                            {"X-Content-Type-Options", "nosniff"},
                            {"Referrer-Policy", "no-referrer"}});
}

// What a request may be, decided before any route: only GET and HEAD, a Host naming this server,
// a bounded number of headers, no body.
void DashboardServer::install_request_checks() {
  http_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (req.method != "GET" && req.method != "HEAD") {
      res.set_header("Allow", "GET, HEAD");
      refuse(req, res, 405,
             fmt::format("{} is not allowed: the dashboard only reads", req.method.substr(0, 16)));
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.headers.size() > kMaxHeaders) {
      refuse(req, res, 431, "too many request headers");
      return httplib::Server::HandlerResponse::Handled;
    }
    // Two Host headers are two answers to "which site": a proxy may check one and the server
    // read the other, so neither is trusted.
    if (req.get_header_value_count("Host") > 1) {
      refuse(req, res, 400, "more than one Host header");
      return httplib::Server::HandlerResponse::Handled;
    }
    // A page on another origin that rebinds its DNS name to 127.0.0.1 sends its own name here.
    const std::string host = lowercase(host_name(req.get_header_value("Host")));
    const bool allowed =
        is_loopback_host(host) || (!options_.host.empty() && host == lowercase(options_.host));
    if (!allowed) {
      refuse(req, res, 403,
             fmt::format("Host '{}' is not this dashboard's; open it as "
                         "http://127.0.0.1:{}/ (or the --host it was started with)",
                         host.substr(0, 64), port_));
      return httplib::Server::HandlerResponse::Handled;
    }
    // cpp-httplib never reads a GET's body; refuse one announced (by length or as chunks)
    // rather than leave it unread.
    const std::string length = req.get_header_value("Content-Length");
    if (!req.body.empty() || (!length.empty() && length != "0") ||
        req.has_header("Transfer-Encoding")) {
      refuse(req, res, 413, "a GET request carries no body");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
}

void DashboardServer::install_api() {
  httplib::Server& http = *http_;
  // Runs an API handler and maps what it throws to a status the page can show.
  auto api = [this](auto&& body) {
    return [this, body](const httplib::Request& req, httplib::Response& res) {
      try {
        send_json(req, res, 200, body(req.params));
      } catch (const BadRequest& e) {
        send_error(req, res, 400, e.what(), e.param());
      } catch (const NotFound& e) {
        send_error(req, res, 404, e.what());
      } catch (const results::StoreError& e) {
        report_problem(e.what());
        send_error(req, res, 503, e.what());
      } catch (const std::exception& e) {
        report_problem(fmt::format("{} failed: {}", req.path, e.what()));
        send_error(req, res, 500, e.what());
      }
    };
  };
  auto with_db = [this](auto fn) {
    return [this, fn](const Query& q) {
      return db_.with_connection([&](results::Connection& c) { return fn(c, q); });
    };
  };

  http.Get("/api/status", api([this](const Query& q) {
             const RequestParams params(q, {});  // refuses any parameter
             std::string problem = db_.health();
             report_problem(problem);
             return json{{"db", db_.path()},
                         {"schema_version", db_.schema_version()},
                         {"data_version", db_.data_version()},
                         {"batchlab", options_.version},
                         {"error", problem.empty() ? json() : json(problem)}};
           }));
  http.Get("/api/sweeps", api(with_db([](results::Connection& c, const Query& q) {
             return sweeps_endpoint(c, q, unix_now());
           })));
  http.Get("/api/runs", api(with_db(runs_endpoint)));
  http.Get("/api/curves", api([this](const Query& q) { return curves_endpoint(db_, q); }));
  http.Get("/api/noise", api(with_db(noise_endpoint)));
  http.Get("/api/layers", api(with_db(layers_endpoint)));
  http.Get("/api/milestones", api(with_db(milestones_endpoint)));
  // These read through analysis/, on connections of their own: the file is checked first, so a
  // database that is gone, replaced or no longer batchlab's is a 503 naming that, as elsewhere.
  http.Get("/api/report", api([this](const Query& q) {
             db_.check_now();
             return report_endpoint(db_.path(), q);
           }));
  http.Get("/api/study", api([this](const Query& q) {
             db_.check_now();
             return study_endpoint(db_.path(), q);
           }));
}

// The page and its assets: whole-path matches against the embedded table, nothing else.
void DashboardServer::install_assets() {
  // Scripts are the bulk of the page: compressed once, at the best level, and served as such.
  for (const Asset& asset : assets()) {
    if (asset.content_type.rfind("application/javascript", 0) == 0) {
      gzipped_assets_[std::string(asset.path)] = gzip(asset.body, 9);
    }
  }
  http_->Get(R"(/.*)", [this](const httplib::Request& req, httplib::Response& res) {
    const Asset* asset = find_asset(req.path);
    if (asset == nullptr) {
      send_error(req, res, 404,
                 fmt::format("no such page or endpoint: {}", req.path.substr(0, 128)));
      return;
    }
    const std::string etag = etag_of(*asset);
    res.set_header("ETag", etag);
    res.set_header("Cache-Control", "no-cache");
    if (req.get_header_value("If-None-Match") == etag) {
      res.status = 304;
      return;
    }
    res.set_header("Vary", "Accept-Encoding");
    const auto packed = gzipped_assets_.find(req.path);
    if (packed != gzipped_assets_.end() && accepts_gzip(req.get_header_value("Accept-Encoding"))) {
      res.set_header("Content-Encoding", "gzip");
      res.set_content(packed->second, std::string(asset->content_type));
      return;
    }
    res.set_content(std::string(asset->body), std::string(asset->content_type));
  });
}

void DashboardServer::bind() {
  const bool ok = options_.port == 0 ? (port_ = http_->bind_to_any_port(options_.host)) > 0
                                     : http_->bind_to_port(options_.host, options_.port);
  if (!ok) {
    const std::string shown =
        options_.host.find(':') != std::string::npos ? "[" + options_.host + "]" : options_.host;
    throw BindError(fmt::format(
        "cannot listen on {}:{}: {}; pick another port with --port N (--port 0 takes any free "
        "port){}",
        shown, options_.port, bind_failure_reason(options_.host, options_.port),
        is_loopback_host(options_.host) ? "" : ", or another address with --host"));
  }
  if (options_.port != 0) port_ = options_.port;
  http_->widen_listen_backlog();
}

void DashboardServer::run() {
  run_called_ = true;
  if (!stop_requested_) http_->listen_after_bind();
  run_returned_ = true;
}

void DashboardServer::stop() {
  stop_requested_ = true;
  http_->wake_all();  // connections waiting for a request end now, not at their idle timeout
  while (run_called_ && !run_returned_) {
    if (http_->is_running()) {
      http_->stop();
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace batchlab::serve
