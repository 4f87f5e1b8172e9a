#include "dispatcher/cli/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <sys/socket.h>
#include <sys/time.h>

namespace egress::cli {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;

constexpr int kTimeoutSeconds = 10;

// Blocking reads and writes give up after kTimeoutSeconds instead of hanging on a stuck server.
void SetTimeouts(asio::ip::tcp::socket& sock) {
  timeval tv{.tv_sec = kTimeoutSeconds, .tv_usec = 0};
  setsockopt(sock.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(sock.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

}  // namespace

Result<ServerUrl> ParseServerUrl(const std::string& text) {
  std::string rest = text;
  if (rest.rfind("https://", 0) == 0) {
    return Status::InvalidArgument("--server: https is not supported; use http://host:port");
  }
  if (rest.rfind("http://", 0) == 0) {
    rest = rest.substr(7);
  }
  while (!rest.empty() && rest.back() == '/') {
    rest.pop_back();
  }
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size()) {
    return Status::InvalidArgument("--server: '" + text + "' is not http://host:port");
  }
  ServerUrl url{rest.substr(0, colon), rest.substr(colon + 1)};
  if (url.host.size() > 2 && url.host.front() == '[' && url.host.back() == ']') {
    url.host = url.host.substr(1, url.host.size() - 2);
  }
  if (url.port.find_first_not_of("0123456789") != std::string::npos) {
    return Status::InvalidArgument("--server: port '" + url.port + "' is not a number");
  }
  return url;
}

Result<HttpReply> HttpCall(const ServerUrl& server, const std::string& method,
                           const std::string& target, const std::string& body,
                           const std::string& admin_token) {
  const std::string where = "http://" + server.host + ":" + server.port;
  if (server.port == "0") {
    return Status::Unavailable(where + ": no port to connect to");
  }
  asio::io_context io;
  asio::ip::tcp::resolver resolver(io);
  boost::system::error_code ec;
  auto endpoints = resolver.resolve(server.host, server.port, ec);
  if (ec) {
    return Status::Unavailable(where + ": " + ec.message());
  }
  asio::ip::tcp::socket sock(io);
  asio::connect(sock, endpoints, ec);
  if (ec) {
    return Status::Unavailable(where + ": " + ec.message());
  }
  SetTimeouts(sock);
  http::request<http::string_body> req{http::string_to_verb(method), target, 11};
  req.set(http::field::host, server.host);
  req.set(http::field::user_agent, "relay-egress-cli");
  if (!body.empty()) {
    req.set(http::field::content_type, "application/json");
    req.body() = body;
  }
  if (!admin_token.empty()) {
    req.set("X-Admin-Token", admin_token);
  }
  req.prepare_payload();
  http::write(sock, req, ec);
  boost::beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(256 << 20);
  if (!ec) {
    http::read(sock, buffer, parser, ec);
  }
  if (ec) {
    return Status::IoError(where + target + ": " + ec.message());
  }
  HttpReply reply;
  reply.status = parser.get().result_int();
  reply.body = std::move(parser.get().body());
  boost::system::error_code ignored;
  sock.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  return reply;
}

}  // namespace egress::cli
