// The HTTP/2 client on nghttp2 (adapters/h2_transport.h) against the platform simulator over TLS
// and Debian's nginx on 127.0.0.1: what it must do that the shared TLS cases
// (transport_tls_itest.cc) do not show. HTTP/1.1 by ALPN goes to libcurl; a GOAWAY loses no
// request; the SSRF policy holds on a reused connection; a timeout ends only its stream; bodies
// are capped; CancelAll ends everything.

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <gtest/gtest.h>

#include "adapters/h2_transport.h"
#include "adapters/ssrf_guard.h"
#include "tests/support/loopback_tls_server.h"
#include "tests/support/nginx_server.h"
#include "tests/support/sim_process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/transport_runner.h"

namespace egress::adapters {
namespace {

using nlohmann::json;

SsrfPolicy AllowLoopback() { return SsrfPolicy{.allow_private_networks = true}; }

class H2TransportTest : public ::testing::Test, public TransportRunner {
 protected:
  void Use(TransportOptions options) { transport_ = NewHttpTransport(io_, clock_, options); }

  HttpRequest Post(const std::string& url, std::string body = "{}") {
    return {
        .url = url, .body = std::move(body), .timeout = Millis(10'000), .ssrf = AllowLoopback()};
  }
};

// Verifies that an origin whose ALPN answer is HTTP/1.1 is reached over HTTP/1.1 (through
// libcurl), every request answered, the later ones too.
TEST_F(H2TransportTest, AnOriginChoosingHttp11ByAlpnGetsHttp11) {
  SimProcess sim;
  ASSERT_TRUE(sim.Start(SimWire::kHttps1).ok());
  Use({.ca_file = sim.ca_file()});
  for (int round = 0; round < 2; ++round) {
    std::vector<HttpRequest> requests;
    for (int i = 0; i < 20; ++i) {
      requests.push_back(Post(sim.BaseUrl() + "/hooks/h1"));
    }
    for (const auto& r : SendAll(std::move(requests))) {
      ASSERT_TRUE(r.has_value()) << r.error().ToString();
      EXPECT_EQ(r->status, 200);
      EXPECT_FALSE(r->http2);
    }
  }
  const json stats = sim.Stats();
  EXPECT_EQ(stats["protocols"][SimProtocolKey(SimWire::kHttps1)], 40) << stats["protocols"];
}

// Verifies HTTP/2 to the simulator: answers arrive with their status, headers and body; 200
// requests at once ride two connections (max_concurrent_streams 100 each).
TEST_F(H2TransportTest, RequestsShareOneConnection) {
  SimProcess sim;
  ASSERT_TRUE(sim.Start(SimWire::kHttps2).ok());
  Use({.ca_file = sim.ca_file()});
  std::vector<HttpRequest> requests;
  for (int i = 0; i < 200; ++i) {
    requests.push_back(Post(sim.BaseUrl() + "/hooks/h2-" + std::to_string(i % 10)));
  }
  for (const auto& r : SendAll(std::move(requests))) {
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    EXPECT_EQ(r->status, 200);
    EXPECT_TRUE(r->http2);
    EXPECT_EQ(r->remote_ip, "127.0.0.1");
  }
  EXPECT_EQ(transport_->ConnectionsOpened(), 2u);
  const json stats = sim.Stats();
  EXPECT_EQ(stats["protocols"][SimProtocolKey(SimWire::kHttps2)], 200) << stats["protocols"];
}

// Verifies that nginx's GOAWAY after 1,000 requests on a connection (keepalive_requests) loses
// nothing: streams it did not take are sent again on a new connection, which resumes the TLS
// session.
TEST_F(H2TransportTest, GoawayLosesNoRequest) {
  NginxServer nginx;
  if (NginxServer::Binary().empty()) {
    GTEST_SKIP() << "nginx is not installed (apt-get install nginx-light)";
  }
  ASSERT_NE(nginx.port(), 0) << nginx.error();
  // One connection at a time: every connection after the first opens after a GOAWAY, when the
  // first one's TLS session is at hand.
  Use({.max_host_connections = 1, .ca_file = nginx.ca_file()});
  int answered = 0;
  for (int round = 0; round < 10; ++round) {
    std::vector<HttpRequest> requests;
    for (int i = 0; i < 300; ++i) {
      requests.push_back(Post(nginx.Url("/hooks/g"), std::string(200, 'x')));
    }
    for (const auto& r : SendAll(std::move(requests))) {
      ASSERT_TRUE(r.has_value()) << r.error().ToString();
      EXPECT_EQ(r->status, 200);
      EXPECT_EQ(r->body, "ok");
      answered += r.has_value() && r->status == 200;
    }
  }
  EXPECT_EQ(answered, 3000);
  EXPECT_GE(transport_->ConnectionsOpened(), 3u);  // 1,000 requests a connection at most
  EXPECT_LE(transport_->ConnectionsOpened(), 4u);
  // The connection opened after the last GOAWAY resumed the TLS session of an earlier one
  // (nginx: $ssl_session_reused is "r"), rather than a full handshake.
  auto resumed = SendOne({.method = "GET", .url = nginx.Url("/reused/"), .ssrf = AllowLoopback()});
  ASSERT_TRUE(resumed.has_value()) << resumed.error().ToString();
  EXPECT_EQ(resumed->body, "r");
}

// Verifies max_total_connections (1 here): a request to a second origin closes the first
// origin's idle connection to make room, as libcurl does, instead of waiting for its timeout.
TEST_F(H2TransportTest, AtTheTotalLimitTheIdlestConnectionMakesRoom) {
  SimProcess first;
  ASSERT_TRUE(first.Start(SimWire::kHttps2).ok());
  SimProcess second;
  ASSERT_TRUE(second.Start(SimWire::kHttps2).ok());
  HttpRequest to_first = Post(first.BaseUrl() + "/hooks/a");
  to_first.ca_file = first.ca_file();
  HttpRequest to_second = Post(second.BaseUrl() + "/hooks/b");
  to_second.ca_file = second.ca_file();
  Use({.max_total_connections = 1});
  for (const HttpRequest& r : {to_first, to_second, to_first}) {
    HttpRequest request = r;
    request.timeout = Millis(3'000);
    auto answer = SendOne(std::move(request));
    ASSERT_TRUE(answer.has_value()) << answer.error().ToString();
    EXPECT_EQ(answer->status, 200);
  }
  EXPECT_EQ(transport_->ConnectionsOpened(), 3u);
}

// Verifies the SSRF policy: a request whose policy refuses loopback never connects, and is
// refused on a connection another request's policy opened (no reuse past the policy).
TEST_F(H2TransportTest, SsrfPolicyHoldsOnAReusedConnection) {
  SimProcess sim;
  ASSERT_TRUE(sim.Start(SimWire::kHttps2).ok());
  Use({.ca_file = sim.ca_file()});
  HttpRequest strict = Post(sim.BaseUrl() + "/hooks/s");
  strict.ssrf = SsrfPolicy{};
  auto refused = SendOne(strict);
  ASSERT_FALSE(refused.has_value());
  EXPECT_TRUE(IsSsrfRefusal(refused.error())) << refused.error().ToString();
  EXPECT_EQ(refused.error().message(), "destination_not_allowed: loopback address");
  EXPECT_EQ(transport_->ConnectionsOpened(), 0u);
  auto allowed = SendOne(Post(sim.BaseUrl() + "/hooks/s"));
  ASSERT_TRUE(allowed.has_value()) << allowed.error().ToString();
  EXPECT_EQ(transport_->ConnectionsOpened(), 1u);
  auto again = SendOne(strict);
  ASSERT_FALSE(again.has_value());
  EXPECT_TRUE(IsSsrfRefusal(again.error())) << again.error().ToString();
  EXPECT_EQ(sim.Stats()["totals"]["requests"], 1);
}

// Verifies timeouts: a request to a receiver that answers in 3 s with a 300 ms timeout fails
// TimedOut well before the answer, while requests on the same connection are answered, and the
// connection stays usable.
TEST_F(H2TransportTest, ATimeoutEndsOnlyItsStream) {
  SimProcess sim;
  ASSERT_TRUE(sim.Start(SimWire::kHttps2).ok());
  sim.Configure({{"hooks", {{"slow", {{"faults", {{"delay_ms", 3000}}}}}}}});
  Use({.ca_file = sim.ca_file()});
  std::vector<HttpRequest> requests;
  HttpRequest slow = Post(sim.BaseUrl() + "/hooks/slow");
  slow.timeout = Millis(300);
  requests.push_back(slow);
  for (int i = 0; i < 10; ++i) {
    requests.push_back(Post(sim.BaseUrl() + "/hooks/fast"));
  }
  const SteadyTime start = clock_.Now();
  auto results = SendAll(std::move(requests));
  const auto took = std::chrono::duration_cast<Millis>(clock_.Now() - start);
  ASSERT_FALSE(results[0].has_value());
  EXPECT_EQ(results[0].error().code(), Status::Code::kTimedOut) << results[0].error().ToString();
  for (size_t i = 1; i < results.size(); ++i) {
    ASSERT_TRUE(results[i].has_value()) << results[i].error().ToString();
    EXPECT_EQ(results[i]->status, 200);
  }
  EXPECT_LT(took.count(), 2500);
  auto after = SendOne(Post(sim.BaseUrl() + "/hooks/fast"));
  ASSERT_TRUE(after.has_value()) << after.error().ToString();
  EXPECT_EQ(transport_->ConnectionsOpened(), 1u);
}

// Verifies that a response body is kept up to max_response_body and the rest read and dropped
// (body_truncated), the connection still usable.
TEST_F(H2TransportTest, ResponseBodiesAreCapped) {
  SimProcess sim;
  ASSERT_TRUE(sim.Start(SimWire::kHttps2).ok());
  sim.Configure(
      {{"hooks", {{"big", {{"faults", {{"status", 200}, {"body", std::string(200'000, 'b')}}}}}}}});
  Use({.max_response_body = 1000, .ca_file = sim.ca_file()});
  auto r = SendOne(Post(sim.BaseUrl() + "/hooks/big"));
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body.size(), 1000u);
  EXPECT_TRUE(r->body_truncated);
  auto next = SendOne(Post(sim.BaseUrl() + "/hooks/small"));
  ASSERT_TRUE(next.has_value()) << next.error().ToString();
  EXPECT_FALSE(next->body_truncated);
  EXPECT_EQ(transport_->ConnectionsOpened(), 1u);
}

// Verifies the response header cap: an answer with 600 header fields (over 512) fails its
// request as Unavailable, and the connection goes on serving the next.
TEST_F(H2TransportTest, ResponseHeadersAreCapped) {
  SimProcess sim;
  ASSERT_TRUE(sim.Start(SimWire::kHttps2).ok());
  json headers = json::object();
  for (int i = 0; i < 600; ++i) {
    headers["x-many-" + std::to_string(i)] = "v";
  }
  sim.Configure({{"hooks", {{"many", {{"faults", {{"status", 200}, {"headers", headers}}}}}}}});
  Use({.ca_file = sim.ca_file()});
  auto r = SendOne(Post(sim.BaseUrl() + "/hooks/many"));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Status::Code::kUnavailable) << r.error().ToString();
  EXPECT_NE(r.error().message().find("response headers over 512 fields"), std::string::npos)
      << r.error().ToString();
  auto next = SendOne(Post(sim.BaseUrl() + "/hooks/few"));
  ASSERT_TRUE(next.has_value()) << next.error().ToString();
  EXPECT_EQ(next->status, 200);
  EXPECT_EQ(transport_->ConnectionsOpened(), 1u);
}

// Verifies that a hostile HTTP/2 server ends only its own requests, as Unavailable, never the
// process: bytes that are not HTTP/2 at all; a frame far over the maximum frame size; a SETTINGS
// frame of a length no SETTINGS can have; a flood of PINGs.
TEST_F(H2TransportTest, AHostileServerEndsOnlyItsRequests) {
  const std::string settings("\x00\x00\x00\x04\x00\x00\x00\x00\x00", 9);
  std::string pings;
  for (int i = 0; i < 20'000; ++i) {
    pings += std::string("\x00\x00\x08\x06\x00\x00\x00\x00\x00", 9) + std::string(8, 'p');
  }
  const std::string replies[] = {
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
      settings + std::string("\xff\xff\xff\x00\x00\x00\x00\x00\x01", 9) + std::string(4096, 'x'),
      std::string("\x00\x00\x05\x04\x00\x00\x00\x00\x00", 9) + std::string(5, '\0'),
      settings + pings,
  };
  for (const std::string& reply : replies) {
    LoopbackTlsServer server({.h2_reply = reply});
    TempDir dir;
    std::ofstream(dir.Sub("ca.pem")) << server.cert_pem();
    Use({.ca_file = dir.Sub("ca.pem")});
    std::vector<HttpRequest> requests;
    for (int i = 0; i < 3; ++i) {
      HttpRequest r = Post(server.Url("/x"));
      r.timeout = Millis(3'000);
      requests.push_back(std::move(r));
    }
    for (const auto& r : SendAll(std::move(requests))) {
      ASSERT_FALSE(r.has_value());
      EXPECT_EQ(r.error().code(), Status::Code::kUnavailable) << r.error().ToString();
    }
    EXPECT_EQ(transport_->InFlight(), 0u);
  }
}

// Verifies that CancelAll ends every request in flight with Cancelled (callbacks posted).
TEST_F(H2TransportTest, CancelAllEndsEveryRequest) {
  SimProcess sim;
  ASSERT_TRUE(sim.Start(SimWire::kHttps2).ok());
  sim.Configure({{"hooks", {{"slow", {{"faults", {{"delay_ms", 3000}}}}}}}});
  Use({.ca_file = sim.ca_file()});
  boost::asio::steady_timer cancel(io_, std::chrono::milliseconds(300));
  cancel.async_wait([&](const boost::system::error_code&) { transport_->CancelAll(); });
  std::vector<HttpRequest> requests;
  for (int i = 0; i < 5; ++i) {
    requests.push_back(Post(sim.BaseUrl() + "/hooks/slow"));
  }
  for (const auto& r : SendAll(std::move(requests))) {
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), Status::Code::kCancelled) << r.error().ToString();
  }
  EXPECT_EQ(transport_->InFlight(), 0u);
}

// Verifies that a replaced CA file is used from the next connection on, without a reload: the
// file first holds a stranger's certificate (the server is refused, Rejected), then the server's
// (answered), at the same path.
TEST_F(H2TransportTest, AReplacedCaFileCountsFromTheNextConnection) {
  if (NginxServer::Binary().empty()) {
    GTEST_SKIP() << "nginx is not installed (apt-get install nginx-light)";
  }
  NginxServer nginx;
  ASSERT_NE(nginx.port(), 0) << nginx.error();
  TempDir dir;
  const std::string ca = dir.Sub("ca.pem");
  std::ofstream(ca)
      << MakeTestCertificate("a stranger, and longer than the server's name").cert_pem;
  Use({.ca_file = ca});
  auto refused = SendOne(Post(nginx.Url("/hooks/r")));
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), Status::Code::kRejected) << refused.error().ToString();
  std::ostringstream server;
  server << std::ifstream(nginx.ca_file()).rdbuf();
  std::ofstream(ca, std::ios::trunc) << server.str();
  auto answered = SendOne(Post(nginx.Url("/hooks/r")));
  ASSERT_TRUE(answered.has_value()) << answered.error().ToString();
  EXPECT_EQ(answered->status, 200);
}

// Verifies that URLs the HTTP/2 client does not take (malformed ports and IPv6 literals, spaces)
// go to libcurl, whose parser refuses them as before: InvalidArgument, no connection.
TEST_F(H2TransportTest, UrlsItDoesNotParseGoToLibcurl) {
  Use({});
  for (const std::string url :
       {"https://127.0.0.1:99999/x", "https://[::1/x", "https://exa mple.com/"}) {
    auto r = SendOne({.url = url, .body = "b"});
    ASSERT_FALSE(r.has_value()) << url;
    EXPECT_EQ(r.error().code(), Status::Code::kInvalidArgument) << r.error().ToString();
  }
  EXPECT_EQ(transport_->ConnectionsOpened(), 0u);
}

}  // namespace
}  // namespace egress::adapters
