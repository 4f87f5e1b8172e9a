#include "tests/support/loopback_http_server.h"

#include <strings.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <netinet/in.h>
#include <sys/socket.h>

#include "dispatcher/base/check.h"

namespace egress {

namespace http = boost::beast::http;
namespace asio = boost::asio;

std::string LoopbackHttpServer::Request::Header(const std::string& name) const {
  for (const auto& [n, v] : headers) {
    if (strcasecmp(n.c_str(), name.c_str()) == 0) {
      return v;
    }
  }
  return "";
}

LoopbackHttpServer::LoopbackHttpServer(Handler handler) : handler_(std::move(handler)) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
  EGRESS_CHECK(listen_fd_ >= 0);
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  // loopback only, ever
  addr.sin_port = 0;
  EGRESS_CHECK(bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  EGRESS_CHECK(listen(listen_fd_, 128) == 0);
  socklen_t len = sizeof addr;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

LoopbackHttpServer::~LoopbackHttpServer() {
  stopping_ = true;
  shutdown(listen_fd_, SHUT_RDWR);  // wakes accept()
  acceptor_.join();
  close(listen_fd_);  // only now: the acceptor may still be in accept(listen_fd_) until joined
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : open_fds_) {
      shutdown(fd, SHUT_RDWR);
    }
  }
  stopped_.notify_all();
  for (auto& t : threads_) {
    t.join();
  }
}

std::string LoopbackHttpServer::Url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + path;
}

void LoopbackHttpServer::AcceptLoop() {
  while (!stopping_) {
    int fd = accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) {
      continue;  // shut down, or interrupted
    }
    std::lock_guard<std::mutex> lock(mu_);
    open_fds_.push_back(fd);
    const int n = ++connections_;
    threads_.emplace_back([this, fd, n] { Serve(fd, n); });
  }
}

void LoopbackHttpServer::Serve(int fd, int connection) {
  asio::io_context io;
  asio::ip::tcp::socket sock(io, asio::ip::tcp::v4(), fd);
  boost::beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(8 << 20);  // Beast's default (1 MiB) is below what tests send
    boost::system::error_code ec;
    http::read(sock, buffer, parser, ec);
    if (ec) {
      break;
    }
    http::request<http::string_body> req = parser.release();
    Request r{
        std::string(req.method_string()), std::string(req.target()), {}, req.body(), connection};
    for (const auto& f : req) {
      r.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
    }
    std::optional<Response> out = handler_(r);
    if (!out) {
      std::unique_lock<std::mutex> lock(mu_);
      stopped_.wait(lock, [this] { return stopping_.load(); });
      break;
    }
    if (out->delay > std::chrono::milliseconds(0)) {
      std::unique_lock<std::mutex> lock(mu_);
      if (stopped_.wait_for(lock, out->delay, [this] { return stopping_.load(); })) {
        break;
      }
    }
    http::response<http::string_body> res{static_cast<http::status>(out->status), 11};
    bool keep_alive = req.keep_alive();
    for (const auto& [n, v] : out->headers) {
      if (boost::beast::iequals(n, "connection") && boost::beast::iequals(v, "close")) {
        keep_alive = false;
      } else {
        res.set(n, v);
      }
    }
    res.body() = std::move(out->body);
    res.keep_alive(keep_alive);
    res.prepare_payload();
    http::write(sock, res, ec);
    if (ec || !keep_alive) {
      break;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::erase(open_fds_, fd);  // the socket closes fd when it goes out of scope
}

}  // namespace egress
