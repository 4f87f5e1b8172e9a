#include "tests/simulator/sim_request_parser.h"

#include <algorithm>
#include <cctype>
#include <ostream>
#include <string>
#include <string_view>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <gtest/gtest.h>

namespace egress::sim {
namespace {

namespace http = boost::beast::http;

// What the server handed over before: Beast's request_parser<string_body>, then a copy into
// a fresh SimRequest.
SimRequest ViaBeastMessage(std::string_view text) {
  http::request_parser<http::string_body> parser;
  parser.eager(true);
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(text.data(), text.size()), ec);
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_TRUE(parser.is_done());
  http::request<http::string_body> req = parser.release();
  SimRequest out;
  out.method = std::string(req.method_string());
  std::string_view target(req.target().data(), req.target().size());
  size_t q = target.find('?');
  out.path = std::string(target.substr(0, q));
  if (q != std::string_view::npos) {
    out.query = std::string(target.substr(q + 1));
  }
  for (const auto& field : req) {
    std::string name(field.name_string());
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    out.headers.emplace_back(std::move(name), std::string(field.value()));
  }
  out.body = std::move(req.body());
  return out;
}

// Parses `text` into `into` (reused), returning how many bytes the request took.
size_t ParseInto(SimRequest& into, std::string_view text, unsigned* version = nullptr,
                 bool* keep_alive = nullptr) {
  SimRequestParser parser(into);
  parser.eager(true);
  boost::beast::error_code ec;
  size_t used = parser.put(boost::asio::buffer(text.data(), text.size()), ec);
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_TRUE(parser.is_done());
  if (version != nullptr) {
    *version = parser.version();
  }
  if (keep_alive != nullptr) {
    *keep_alive = parser.keep_alive();
  }
  return used;
}

void ExpectSame(const SimRequest& got, const SimRequest& want) {
  EXPECT_EQ(got.method, want.method);
  EXPECT_EQ(got.path, want.path);
  EXPECT_EQ(got.query, want.query);
  EXPECT_EQ(got.headers, want.headers);
  EXPECT_EQ(got.body, want.body);
}

constexpr std::string_view kSigned =
    "POST /hooks/bench?wait=true HTTP/1.1\r\n"
    "Host: 127.0.0.1:8080\r\n"
    "Accept: */*\r\n"
    "Content-Type: application/json\r\n"
    "Webhook-Id: d17\r\n"
    "webhook-timestamp: 1700000000\r\n"
    "WEBHOOK-SIGNATURE:   v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=  \r\n"
    "Content-Length: 15\r\n"
    "\r\n"
    "{\"msg_id\":\"a\"}\n";

constexpr std::string_view kChunked =
    "PUT /_sim/config HTTP/1.0\r\n"
    "Transfer-Encoding: chunked\r\n"
    "Connection: keep-alive\r\n"
    "\r\n"
    "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";

constexpr std::string_view kBare = "GET /_sim/stats HTTP/1.1\r\nHost: x\r\n\r\n";

// Verifies a request arrives as the Beast message copy did: method, path, query, lower-case
// names in order, trimmed values, the body (also chunked).
TEST(SimRequestParserTest, MatchesBeastMessage) {
  for (std::string_view text : {kSigned, kChunked, kBare}) {
    SimRequest req;
    EXPECT_EQ(ParseInto(req, text), text.size());
    ExpectSame(req, ViaBeastMessage(text));
  }
}

// Verifies one SimRequest reused for a connection's requests holds only the latest one, with
// fewer or more headers and with or without a body.
TEST(SimRequestParserTest, ReusedRequestHoldsOnlyTheLatest) {
  SimRequest req;
  for (std::string_view text : {kSigned, kBare, kChunked, kSigned, kBare}) {
    ParseInto(req, text);
    ExpectSame(req, ViaBeastMessage(text));
  }
}

// Verifies version and keep-alive come from the request line and Connection header.
TEST(SimRequestParserTest, ReportsVersionAndKeepAlive) {
  SimRequest req;
  unsigned version = 0;
  bool keep_alive = false;
  ParseInto(req, kChunked, &version, &keep_alive);
  EXPECT_EQ(version, 10u);
  EXPECT_TRUE(keep_alive);
  ParseInto(req, "POST /hooks/a HTTP/1.1\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            &version, &keep_alive);
  EXPECT_EQ(version, 11u);
  EXPECT_FALSE(keep_alive);
}

}  // namespace
}  // namespace egress::sim
