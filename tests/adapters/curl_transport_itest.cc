// CurlTransport against a real HTTP server on 127.0.0.1.

#include <atomic>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "adapters/curl_transport.h"
#include "tests/support/loopback_http_server.h"
#include "tests/support/loopback_tls_server.h"
#include "tests/support/temp_dir.h"
#include "tests/support/transport_runner.h"

namespace egress::adapters {
namespace {

using Server = LoopbackHttpServer;

SsrfPolicy AllowLoopback() { return SsrfPolicy{.allow_private_networks = true}; }

class CurlTransportTest : public ::testing::Test, public TransportRunner {
 protected:
  CurlTransportTest() { transport_ = NewCurlTransport(io_, clock_, TransportOptions{}); }
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

// Verifies the User-Agent: the configured one by default, the request's own when it has one.
TEST_F(CurlTransportTest, SendsUserAgent) {
  Server server([](const Server::Request& r) {
    return Server::Response{200, {}, r.Header("User-Agent")};
  });
  EXPECT_EQ(SendOne({.url = server.Url("/")})->body, TransportOptions{}.user_agent);
  EXPECT_EQ(SendOne({.url = server.Url("/"), .headers = {{"user-agent", "mine/1"}}})->body,
            "mine/1");
  EXPECT_EQ(SendOne({.method = "GET", .url = server.Url("/")})->body,
            TransportOptions{}.user_agent);
}

// Verifies that no request waits for "100 Continue", small or large (over libcurl's 1 MiB
// threshold), and that the body arrives whole either way.
TEST_F(CurlTransportTest, NeverSendsExpect100Continue) {
  Server server([](const Server::Request& r) {
    return Server::Response{
        200, {}, "[" + r.Header("Expect") + "] " + std::to_string(r.body.size())};
  });
  for (size_t size : {size_t{0}, size_t{10}, size_t{1024}, size_t{1025}, size_t{(1 << 20) + 1}}) {
    Result<HttpResponse> r = SendOne({.url = server.Url("/"), .body = std::string(size, 'b')});
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    EXPECT_EQ(r->body, "[] " + std::to_string(size));
  }
}

// Verifies that a pooled easy handle carries nothing over from its previous request: method,
// body and headers are each request's own.
TEST_F(CurlTransportTest, ReusedHandleForgetsPreviousRequest) {
  Server server([](const Server::Request& r) {
    return Server::Response{200, {}, r.method + " [" + r.body + "] x=" + r.Header("X-A")};
  });
  EXPECT_EQ(SendOne({.url = server.Url("/"), .headers = {{"X-A", "1"}}, .body = "one"})->body,
            "POST [one] x=1");
  EXPECT_EQ(SendOne({.method = "GET", .url = server.Url("/")})->body, "GET [] x=");
  EXPECT_EQ(SendOne({.method = "DELETE", .url = server.Url("/")})->body, "DELETE [] x=");
  EXPECT_EQ(SendOne({.method = "PUT", .url = server.Url("/"), .body = "two"})->body,
            "PUT [two] x=");
  EXPECT_EQ(SendOne({.url = server.Url("/")})->body, "POST [] x=");
  EXPECT_EQ(server.connections_accepted(), 1);
}

// Verifies that each request goes to its own URL when handles and parsed URLs are reused
// (CURLOPT_CURLU from the transport's cache), and that a URL curl cannot parse still fails as
// malformed without disturbing the next request.
TEST_F(CurlTransportTest, EachRequestGoesToItsOwnUrl) {
  Server server([](const Server::Request& r) { return Server::Response{200, {}, r.target}; });
  const std::string base = server.Url("");
  for (const char* target : {"/a?x=1", "/b", "/a?x=1", "/a?x=2", "/c/d?e=f%20g", "/b"}) {
    Result<HttpResponse> r = SendOne({.url = base + target});
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    EXPECT_EQ(r->body, target);
  }
  Result<HttpResponse> fragment = SendOne({.url = base + "/h#frag"});
  ASSERT_TRUE(fragment.has_value()) << fragment.error().ToString();
  EXPECT_EQ(fragment->body, "/h");  // a fragment is not sent
  Result<HttpResponse> bad = SendOne({.url = "http://[::1/x"});
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), Status::Code::kInvalidArgument) << bad.error().ToString();
  EXPECT_EQ(SendOne({.url = base + "/after"})->body, "/after");
  EXPECT_EQ(server.connections_accepted(), 1);
}

// Verifies that connections the server closes are replaced, with requests in flight on others:
// the sockets of closed connections are forgotten, and new ones (often under the same
// descriptor number) are watched afresh.
TEST_F(CurlTransportTest, ServerClosedConnectionsAreReplaced) {
  Server server([](const Server::Request& r) {
    Server::Response res{200, {}, r.body};
    if (std::stoi(r.body) % 3 == 0) {
      res.headers.emplace_back("Connection", "close");
    }
    return res;
  });
  for (int round = 0; round < 3; ++round) {
    std::vector<HttpRequest> reqs;
    for (int i = 0; i < 40; ++i) {
      reqs.push_back({.url = server.Url("/hook"), .body = std::to_string(i)});
    }
    auto results = SendAll(std::move(reqs));
    for (int i = 0; i < 40; ++i) {
      ASSERT_TRUE(results[i].has_value()) << results[i].error().ToString();
      EXPECT_EQ(results[i]->body, std::to_string(i));
    }
  }
  EXPECT_EQ(transport_->InFlight(), 0u);
}

// Verifies the per-host connection cap with a small limit and many more requests than it.
TEST_F(CurlTransportTest, PerHostConnectionCapHolds) {
  transport_ = NewCurlTransport(io_, clock_, TransportOptions{.max_host_connections = 2});
  Server server([](const Server::Request& r) { return Server::Response{200, {}, r.body}; });
  std::vector<HttpRequest> reqs;
  for (int i = 0; i < 50; ++i) {
    reqs.push_back({.url = server.Url("/hook"), .body = std::to_string(i)});
  }
  for (auto& r : SendAll(std::move(reqs))) {
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
  }
  EXPECT_LE(server.connections_accepted(), 2);
}

// Verifies requests waiting for one of a host's connections: they keep their own timeout
// (counted from Send), and CancelAll completes them too.
TEST_F(CurlTransportTest, RequestsWaitingForAConnectionTimeOutAndCancel) {
  transport_ = NewCurlTransport(io_, clock_, TransportOptions{.max_host_connections = 1});
  Server hang([](const Server::Request&) { return std::optional<Server::Response>(); });
  auto timed = SendAll({{.url = hang.Url("/a"), .timeout = Millis(200)},
                        {.url = hang.Url("/b"), .timeout = Millis(200)},
                        {.url = hang.Url("/c"), .timeout = Millis(5'000)}});
  EXPECT_EQ(timed[0].error().code(), Status::Code::kTimedOut) << timed[0].error().ToString();
  EXPECT_EQ(timed[1].error().code(), Status::Code::kTimedOut) << timed[1].error().ToString();
  EXPECT_EQ(timed[2].error().code(), Status::Code::kTimedOut) << timed[2].error().ToString();
  std::vector<Status> seen;
  for (int i = 0; i < 3; ++i) {
    transport_->Send({.url = hang.Url("/slow")}, [&](Result<HttpResponse> r) {
      seen.push_back(r.status());
      if (seen.size() == 3) {
        io_.stop();
      }
    });
  }
  EXPECT_EQ(transport_->InFlight(), 3u);  // one on the connection, two waiting
  transport_->CancelAll();
  EXPECT_EQ(transport_->InFlight(), 0u);
  io_.restart();
  io_.run();
  ASSERT_EQ(seen.size(), 3u);
  for (const Status& s : seen) {
    EXPECT_EQ(s.code(), Status::Code::kCancelled) << s.ToString();
  }
}

// Verifies that timeouts fire at their own deadline whichever order they were set in: a short
// one after a long one (the timer moves earlier), and a short one among requests that keep
// completing and starting (curl's next deadline keeps moving later).
TEST_F(CurlTransportTest, TimeoutsFireInAnyOrder) {
  Server hang([](const Server::Request&) { return std::optional<Server::Response>(); });
  Server fast([](const Server::Request&) { return Server::Response{200, {}, "ok"}; });
  const SteadyTime start = clock_.Now();
  std::optional<Status> long_one, short_one;
  int fast_done = 0;
  transport_->Send({.url = hang.Url("/long"), .timeout = Millis(60'000)},
                   [&](Result<HttpResponse> r) { long_one = r.status(); });
  transport_->Send({.url = hang.Url("/short"), .timeout = Millis(300)},
                   [&](Result<HttpResponse> r) {
                     short_one = r.status();
                     io_.stop();
                   });
  std::function<void()> next = [&] {
    transport_->Send({.url = fast.Url("/")}, [&](Result<HttpResponse> r) {
      if (!r.has_value()) {  // the last one, cancelled below
        EXPECT_EQ(r.error().code(), Status::Code::kCancelled) << r.error().ToString();
        return;
      }
      ++fast_done;
      if (!short_one) {
        next();
      }
    });
  };
  next();
  io_.run();
  ASSERT_TRUE(short_one.has_value());
  EXPECT_EQ(short_one->code(), Status::Code::kTimedOut) << short_one->ToString();
  EXPECT_FALSE(long_one.has_value());
  EXPECT_GT(fast_done, 0);
  EXPECT_LT(clock_.Now() - start, std::chrono::seconds(10));  // not the 60 s one's deadline
  transport_->CancelAll();
  io_.restart();
  io_.poll();
  EXPECT_EQ(long_one->code(), Status::Code::kCancelled);
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
  // The class, never the resolved address (docs/security.md).
  EXPECT_EQ(refused.error().message(), "destination_not_allowed: loopback address");
  EXPECT_EQ(refused.error().message().find("127.0.0.1"), std::string::npos);
  auto named = SendOne(
      {.url = "http://localhost:" + std::to_string(server.port()) + "/hook", .ssrf = SsrfPolicy{}});
  EXPECT_EQ(named.error().code(), Status::Code::kRejected) << named.error().ToString();
  EXPECT_EQ(server.connections_accepted(), 0);
  auto allowed = SendOne({.url = server.Url("/hook"), .ssrf = AllowLoopback()});
  ASSERT_TRUE(allowed.has_value()) << allowed.error().ToString();
  EXPECT_EQ(allowed->status, 200);
}

// Verifies that a pooled connection, opened under a policy that allowed its address (another
// tenant's), is not reused by a request whose policy refuses that address: the check runs again
// before each request is sent, and nothing is sent.
TEST_F(CurlTransportTest, SsrfGuardRefusesAReusedConnection) {
  std::atomic<int> requests{0};
  Server server([&](const Server::Request&) {
    ++requests;
    return Server::Response{200, {}, "ok"};
  });
  auto allowed = SendOne({.url = server.Url("/hook"), .ssrf = AllowLoopback()});
  ASSERT_TRUE(allowed.has_value()) << allowed.error().ToString();
  auto refused = SendOne({.url = server.Url("/hook"), .ssrf = SsrfPolicy{}});
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), Status::Code::kRejected) << refused.error().ToString();
  EXPECT_EQ(refused.error().message(), "destination_not_allowed: loopback address");
  EXPECT_EQ(requests.load(), 1);
  auto again = SendOne({.url = server.Url("/hook"), .ssrf = AllowLoopback()});
  ASSERT_TRUE(again.has_value()) << again.error().ToString();
  EXPECT_EQ(requests.load(), 2);
}

// Verifies TLS verification against a real HTTPS server on loopback: a certificate the client
// does not trust is Rejected before any request is sent (the handshake never completes); the
// same server with its certificate as the CA file answers.
TEST_F(CurlTransportTest, UntrustedCertificateIsRejectedAndTrustedOneAnswers) {
  LoopbackTlsServer tls;
  auto rejected = SendOne({.url = tls.Url("/hook"), .ssrf = AllowLoopback()});
  ASSERT_FALSE(rejected.has_value());
  EXPECT_EQ(rejected.error().code(), Status::Code::kRejected) << rejected.error().ToString();
  EXPECT_EQ(tls.handshakes(), 0);
  TempDir dir;
  const std::string ca = dir.Sub("ca.pem");
  { std::ofstream(ca) << tls.cert_pem(); }
  boost::asio::io_context io;
  auto trusting = NewCurlTransport(io, clock_, TransportOptions{.ca_file = ca});
  std::optional<Result<HttpResponse>> answer;
  trusting->Send({.url = tls.Url("/hook"), .ssrf = AllowLoopback()},
                 [&](Result<HttpResponse> r) { answer = std::move(r); });
  while (!answer) {
    io.run_one();
  }
  ASSERT_TRUE(answer->has_value()) << answer->error().ToString();
  EXPECT_EQ((*answer)->status, 200);
  EXPECT_EQ((*answer)->body, "ok");
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
