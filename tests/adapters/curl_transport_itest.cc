// CurlTransport against a real HTTP server on 127.0.0.1.

#include <atomic>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "adapters/curl_transport.h"
#include "tests/support/loopback_http_server.h"

namespace egress::adapters {
namespace {

using Server = LoopbackHttpServer;

SsrfPolicy AllowLoopback() { return SsrfPolicy{.allow_private_networks = true}; }

class CurlTransportTest : public ::testing::Test {
 protected:
  // Sends every request and runs the loop until all have completed.
  std::vector<Result<HttpResponse>> SendAll(std::vector<HttpRequest> requests) {
    std::vector<Result<HttpResponse>> out(requests.size(), Status::Unavailable("not completed"));
    size_t pending = requests.size();
    for (size_t i = 0; i < requests.size(); ++i) {
      transport_->Send(std::move(requests[i]), [&, i](Result<HttpResponse> r) {
        out[i] = std::move(r);
        if (--pending == 0) {
          io_.stop();
        }
      });
    }
    io_.restart();
    io_.run();
    return out;
  }

  Result<HttpResponse> SendOne(HttpRequest r) { return std::move(SendAll({std::move(r)})[0]); }

  boost::asio::io_context io_;
  SystemClock clock_;
  std::unique_ptr<HttpTransport> transport_ = NewCurlTransport(io_, clock_, TransportOptions{});
};

// Verifies a POST round trip: method, body and headers reach the server, and the status,
// headers and body come back; a 429 is a response, not an error.
TEST_F(CurlTransportTest, PostRoundTripCapturesHeaders) {
  Server server([](const Server::Request& r) {
    return Server::Response{429,
                            {{"Retry-After", "7"}, {"X-Echo", r.Header("X-Token")}},
                            r.method + " " + r.target + " " + r.body};
  });
  auto r = SendOne({.url = server.Url("/api/chat.postMessage"),
                    .headers = {{"X-Token", "abc"}, {"Content-Type", "application/json"}},
                    .body = R"({"a":1})"});
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->status, 429);
  EXPECT_EQ(r->body, R"(POST /api/chat.postMessage {"a":1})");
  bool saw_retry_after = false;
  for (const HttpHeader& h : r->headers) {
    saw_retry_after |= EqualsIgnoreCase(h.name, "retry-after") && h.value == "7";
    if (EqualsIgnoreCase(h.name, "x-echo")) {
      EXPECT_EQ(h.value, "abc");
    }
  }
  EXPECT_TRUE(saw_retry_after);
  EXPECT_EQ(r->remote_ip, "127.0.0.1");
}

// Verifies keep-alive: sequential requests to one host reuse one connection.
TEST_F(CurlTransportTest, ReusesConnections) {
  Server server([](const Server::Request&) { return Server::Response{200, {}, "ok"}; });
  for (int i = 0; i < 20; ++i) {
    auto r = SendOne({.url = server.Url("/x"), .body = "b"});
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
  }
  EXPECT_EQ(server.connections_accepted(), 1);
}

// Verifies that many concurrent requests all complete, within the per-host connection cap.
TEST_F(CurlTransportTest, ManyConcurrentRequestsComplete) {
  Server server([](const Server::Request& r) { return Server::Response{200, {}, r.body}; });
  std::vector<HttpRequest> reqs;
  for (int i = 0; i < 300; ++i) {
    reqs.push_back({.url = server.Url("/hook"), .body = std::to_string(i)});
  }
  auto results = SendAll(std::move(reqs));
  for (int i = 0; i < 300; ++i) {
    ASSERT_TRUE(results[i].has_value()) << results[i].error().ToString();
    EXPECT_EQ(results[i]->body, std::to_string(i));
  }
  EXPECT_LE(server.connections_accepted(), 16);
}

// Verifies that a response body over the cap is cut and flagged.
TEST_F(CurlTransportTest, CapsResponseBody) {
  Server server([](const Server::Request&) {
    return Server::Response{200, {}, std::string(200'000, 'z')};
  });
  auto r = SendOne({.method = "GET", .url = server.Url("/big")});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body.size(), TransportOptions{}.max_response_body);
  EXPECT_TRUE(r->body_truncated);
}

// Verifies the error mapping: a server that never answers times out; a closed port is
// unavailable; a malformed URL is an invalid argument.
TEST_F(CurlTransportTest, MapsTransportErrors) {
  Server hang([](const Server::Request&) { return std::optional<Server::Response>(); });
  int closed_port = 0;
  {
    Server temp([](const Server::Request&) { return Server::Response{}; });
    closed_port = temp.port();
  }
  auto results = SendAll({
      {.url = hang.Url("/slow"), .timeout = Millis(300)},
      {.url = "http://127.0.0.1:" + std::to_string(closed_port) + "/"},
      {.url = "ftp://127.0.0.1/x"},
  });
  EXPECT_EQ(results[0].error().code(), Status::Code::kTimedOut) << results[0].error().ToString();
  EXPECT_EQ(results[1].error().code(), Status::Code::kUnavailable) << results[1].error().ToString();
  EXPECT_EQ(results[2].error().code(), Status::Code::kInvalidArgument)
      << results[2].error().ToString();
}

// Verifies that the SSRF guard refuses the resolved address before any connection is made,
// and allows it when the policy does.
TEST_F(CurlTransportTest, SsrfGuardRefusesBeforeConnecting) {
  Server server([](const Server::Request&) { return Server::Response{200, {}, "ok"}; });
  auto refused = SendOne({.url = server.Url("/hook"), .ssrf = SsrfPolicy{}});
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), Status::Code::kRejected) << refused.error().ToString();
  EXPECT_NE(refused.error().message().find("127.0.0.1"), std::string::npos);
  auto named = SendOne(
      {.url = "http://localhost:" + std::to_string(server.port()) + "/hook", .ssrf = SsrfPolicy{}});
  EXPECT_EQ(named.error().code(), Status::Code::kRejected) << named.error().ToString();
  EXPECT_EQ(server.connections_accepted(), 0);
  auto allowed = SendOne({.url = server.Url("/hook"), .ssrf = AllowLoopback()});
  ASSERT_TRUE(allowed.has_value()) << allowed.error().ToString();
  EXPECT_EQ(allowed->status, 200);
}

// Verifies that CancelAll completes every request in flight with Cancelled.
TEST_F(CurlTransportTest, CancelAllCompletesWithCancelled) {
  Server hang([](const Server::Request&) { return std::optional<Server::Response>(); });
  std::vector<Status> seen;
  for (int i = 0; i < 3; ++i) {
    transport_->Send({.url = hang.Url("/slow")}, [&](Result<HttpResponse> r) {
      seen.push_back(r.status());
      if (seen.size() == 3) {
        io_.stop();
      }
    });
  }
  EXPECT_EQ(transport_->InFlight(), 3u);
  transport_->CancelAll();
  io_.run();
  ASSERT_EQ(seen.size(), 3u);
  for (const Status& s : seen) {
    EXPECT_EQ(s.code(), Status::Code::kCancelled);
  }
}

}  // namespace
}  // namespace egress::adapters
