#include "tests/support/http_client.h"

#include <strings.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

namespace egress {

namespace asio = boost::asio;
namespace http = boost::beast::http;

std::string TestResponse::Header(const std::string& name) const {
  for (const auto& [n, v] : headers) {
    if (strcasecmp(n.c_str(), name.c_str()) == 0) {
      return v;
    }
  }
  return "";
}

TestResponse HttpCall(int port, const std::string& method, const std::string& target,
                      const std::string& body,
                      const std::vector<std::pair<std::string, std::string>>& headers) {
  return HttpCallFrom("", port, method, target, body, headers);
}

TestResponse HttpCallFrom(const std::string& from, int port, const std::string& method,
                          const std::string& target, const std::string& body,
                          const std::vector<std::pair<std::string, std::string>>& headers) {
  TestResponse out;
  asio::io_context io;
  asio::ip::tcp::socket sock(io);
  boost::system::error_code ec;
  if (!from.empty()) {
    sock.open(asio::ip::tcp::v4(), ec);
    if (!ec) {
      sock.bind({asio::ip::make_address(from, ec), 0}, ec);
    }
    if (ec) {
      out.body = "bind " + from + ": " + ec.message();
      return out;
    }
  }
  sock.connect({asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port)}, ec);
  if (ec) {
    out.body = "connect: " + ec.message();
    return out;
  }
  http::request<http::string_body> req{http::string_to_verb(method), target, 11};
  req.set(http::field::host, "127.0.0.1");
  req.set(http::field::content_type, "application/json");
  for (const auto& [n, v] : headers) {
    req.set(n, v);
  }
  req.body() = body;
  req.prepare_payload();
  http::write(sock, req, ec);
  boost::beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 << 20);
  if (!ec) {
    http::read(sock, buffer, parser, ec);
  }
  if (ec) {
    out.body = "io: " + ec.message();
    return out;
  }
  auto res = parser.release();
  out.status = res.result_int();
  for (const auto& f : res) {
    out.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
  }
  out.body = res.body();
  return out;
}

TestResponse HttpCallAs(const std::string& token, int port, const std::string& method,
                        const std::string& target, const std::string& body,
                        std::vector<std::pair<std::string, std::string>> headers) {
  bool own = false;
  for (const auto& [name, value] : headers) {
    own = own || strcasecmp(name.c_str(), "Authorization") == 0 ||
          strcasecmp(name.c_str(), "X-Admin-Token") == 0;
  }
  if (!own) {
    headers.emplace_back("Authorization", "Bearer " + token);
  }
  return HttpCall(port, method, target, body, headers);
}

}  // namespace egress
