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

Result<HostPort> ParseServerUrl(std::string_view text) {
  constexpr std::string_view kHttp = "http://";
  if (text.starts_with("https://")) {
    return Status::InvalidArgument("--server: https is not supported; use http://host:port");
  }
  if (text.starts_with(kHttp)) {
    text.remove_prefix(kHttp.size());
  }
  if (text.find("://") != std::string_view::npos) {
    return Status::InvalidArgument("--server: only http:// is supported; use http://host:port");
  }
  while (!text.empty() && text.back() == '/') {
    text.remove_suffix(1);
  }
  Result<HostPort> parsed = ParseHostPort(text);
  if (!parsed) {
    return Status::InvalidArgument("--server: " + parsed.error().message());
  }
  return parsed;
}

Result<HttpReply> HttpCall(const HostPort& server, const std::string& method,
                           const std::string& target, const std::string& body,
                           const std::string& token) {
  const std::string where = "http://" + server.ToString();
  for (char c : token) {
    if (c < 0x21 || c > 0x7e) {
      // It would end or split the header; never echoed (a secret).
      return Status::InvalidArgument("the token holds a byte that is not visible ASCII");
    }
  }
  if (server.port == 0) {
    return Status::Unavailable(where + ": no port to connect to");
  }
  asio::io_context io;
  asio::ip::tcp::resolver resolver(io);
  boost::system::error_code ec;
  // Not address_configured (Asio's default): with only loopback up it would drop "localhost".
  auto endpoints = resolver.resolve(server.host, std::to_string(server.port),
                                    asio::ip::tcp::resolver::numeric_service, ec);
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
  req.set(http::field::host, server.ToString());
  req.set(http::field::user_agent, "relay-egress-cli");
  if (!body.empty()) {
    req.set(http::field::content_type, "application/json");
    req.body() = body;
  }
  if (!token.empty()) {
    req.set(http::field::authorization, "Bearer " + token);
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
