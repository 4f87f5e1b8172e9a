// CurlTransport over TLS against Debian's nginx on 127.0.0.1 (HTTP/2 by ALPN and HTTP/1.1):
// the HTTP version setting, connection reuse, the minimum TLS version, client certificates.
// Skipped, saying so, when nginx is not installed (`./dev test` installs nginx-light).

#include <fstream>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "adapters/curl_transport.h"
#include "tests/support/nginx_server.h"
#include "tests/support/temp_dir.h"

namespace egress::adapters {
namespace {

SsrfPolicy AllowLoopback() { return SsrfPolicy{.allow_private_networks = true}; }

#define SKIP_WITHOUT_NGINX()                                                 \
  if (NginxServer::Binary().empty()) {                                       \
    GTEST_SKIP() << "nginx is not installed (apt-get install nginx-light); " \
                    "./dev test installs it";                                \
  }

class CurlTransportTlsTest : public ::testing::Test {
 protected:
  void Use(TransportOptions options) { transport_ = NewCurlTransport(io_, clock_, options); }

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

  // `n` POSTs of `body` to `url`, all at once.
  std::vector<Result<HttpResponse>> Post(const std::string& url, int n, const std::string& body) {
    std::vector<HttpRequest> requests;
    for (int i = 0; i < n; ++i) {
      requests.push_back(
          {.url = url, .body = body, .timeout = Millis(5'000), .ssrf = AllowLoopback()});
    }
    return SendAll(std::move(requests));
  }

  boost::asio::io_context io_;
  SystemClock clock_;
  std::unique_ptr<HttpTransport> transport_;
};

// Verifies that http_version "1.1" speaks HTTP/1.1 and "2" and "auto" speak HTTP/2 to a server
// offering both (as nginx saw them: $server_protocol), and that a TLS 1.2 client reaches it.
TEST_F(CurlTransportTlsTest, HttpVersionSettingChoosesTheProtocol) {
  SKIP_WITHOUT_NGINX();
  NginxServer nginx;
  ASSERT_NE(nginx.port(), 0) << nginx.error();
  const std::pair<HttpVersion, std::string> cases[] = {{HttpVersion::kHttp11, "HTTP/1.1"},
                                                       {HttpVersion::kHttp2, "HTTP/2.0"},
                                                       {HttpVersion::kAuto, "HTTP/2.0"}};
  for (const auto& [version, expected] : cases) {
    Use({.http_version = version, .ca_file = nginx.ca_file()});
    auto r = SendOne({.url = nginx.Url("/proto/"), .body = "b", .ssrf = AllowLoopback()});
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, expected);
  }
}

// Verifies connection reuse over HTTP/2: 600 POSTs, 300 at a time, ride at most
// max_host_connections connections (streams multiplexed on them; the first transfers, admitted
// before the origin is known to speak HTTP/2, may each open one), the second 300 open none, and
// 50 sequential ones open none either; over HTTP/1.1 the same load stays within the per-host
// cap. ConnectionsOpened counts the sockets curl opened.
TEST_F(CurlTransportTlsTest, ConnectionsAreReused) {
  SKIP_WITHOUT_NGINX();
  NginxServer nginx;
  ASSERT_NE(nginx.port(), 0) << nginx.error();
  Use({.max_host_connections = 4, .http_version = HttpVersion::kHttp2, .ca_file = nginx.ca_file()});
  for (const auto& r : Post(nginx.Url("/hooks/a"), 300, std::string(300, 'x'))) {
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    EXPECT_EQ(r->status, 200);
  }
  const uint64_t first = transport_->ConnectionsOpened();
  EXPECT_GE(first, 1u);
  EXPECT_LE(first, 4u);
  for (const auto& r : Post(nginx.Url("/hooks/a"), 300, std::string(300, 'x'))) {
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
  }
  EXPECT_EQ(transport_->ConnectionsOpened(), first);
  const uint64_t before = transport_->ConnectionsOpened();
  for (int i = 0; i < 50; ++i) {
    auto r = SendOne({.url = nginx.Url("/hooks/b"), .body = "b", .ssrf = AllowLoopback()});
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
  }
  EXPECT_EQ(transport_->ConnectionsOpened(), before);

  Use({.max_host_connections = 8,
       .http_version = HttpVersion::kHttp11,
       .ca_file = nginx.ca_file()});
  for (const auto& r : Post(nginx.Url("/hooks/c"), 300, "b")) {
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
  }
  EXPECT_GE(transport_->ConnectionsOpened(), 1u);
  EXPECT_LE(transport_->ConnectionsOpened(), 8u);
}

// Verifies that min_tls_version "1.3" refuses a server that speaks only TLS 1.2 (no handshake,
// so no request), while the default (1.2) reaches it.
TEST_F(CurlTransportTlsTest, MinimumTlsVersionRefusesAnOlderServer) {
  SKIP_WITHOUT_NGINX();
  NginxServer nginx({.tls_protocols = "TLSv1.2"});
  ASSERT_NE(nginx.port(), 0) << nginx.error();
  Use({.min_tls_version = TlsVersion::kTls13, .ca_file = nginx.ca_file()});
  auto refused = SendOne({.url = nginx.Url("/hooks/a"), .body = "b", .ssrf = AllowLoopback()});
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), Status::Code::kUnavailable) << refused.error().ToString();
  Use({.ca_file = nginx.ca_file()});
  auto answered = SendOne({.url = nginx.Url("/hooks/a"), .body = "b", .ssrf = AllowLoopback()});
  ASSERT_TRUE(answered.has_value()) << answered.error().ToString();
  EXPECT_EQ(answered->status, 200);
}

// Verifies client certificates: a server requiring one signed by its client CA answers a
// request that presents it, and refuses (nginx: 400) one that presents none or another.
TEST_F(CurlTransportTlsTest, ClientCertificateIsPresentedWhenRequired) {
  SKIP_WITHOUT_NGINX();
  const TestCertificate client = MakeTestCertificate("relay-egress client");
  const TestCertificate stranger = MakeTestCertificate("stranger");
  NginxServer nginx({.client_ca_pem = client.cert_pem});
  ASSERT_NE(nginx.port(), 0) << nginx.error();
  TempDir dir;
  std::ofstream(dir.Sub("client.pem")) << client.cert_pem;
  std::ofstream(dir.Sub("client.key")) << client.key_pem;
  std::ofstream(dir.Sub("stranger.pem")) << stranger.cert_pem;
  std::ofstream(dir.Sub("stranger.key")) << stranger.key_pem;
  for (HttpVersion version : {HttpVersion::kHttp11, HttpVersion::kHttp2}) {
    Use({.http_version = version, .ca_file = nginx.ca_file()});
    auto with = SendOne({.url = nginx.Url("/hooks/m"),
                         .body = "b",
                         .ssrf = AllowLoopback(),
                         .client_cert_file = dir.Sub("client.pem"),
                         .client_key_file = dir.Sub("client.key")});
    ASSERT_TRUE(with.has_value()) << with.error().ToString();
    EXPECT_EQ(with->status, 200);
    EXPECT_EQ(with->body, "ok");
    auto without = SendOne({.url = nginx.Url("/hooks/m"), .body = "b", .ssrf = AllowLoopback()});
    ASSERT_TRUE(without.has_value()) << without.error().ToString();
    EXPECT_EQ(without->status, 400);
    auto other = SendOne({.url = nginx.Url("/hooks/m"),
                          .body = "b",
                          .ssrf = AllowLoopback(),
                          .client_cert_file = dir.Sub("stranger.pem"),
                          .client_key_file = dir.Sub("stranger.key")});
    ASSERT_TRUE(other.has_value()) << other.error().ToString();
    EXPECT_EQ(other->status, 400);
  }
}

// Verifies that a server answering an HTTP/2 POST in full before reading its body (nginx
// `return 200` with a body over its 64 KiB preread buffer, then a stream reset) is a response,
// not an error to retry: libcurl 7.88 fails such transfers with CURLE_HTTP2_STREAM although the
// whole answer arrived for most of them (without the rescue about one in ten succeeded here, with
// it 43 to 120 of 200 on the 2-core machine). Those it failed before any answer reached the
// transfer stay errors (retried).
TEST_F(CurlTransportTlsTest, EarlyAnswerBeforeTheBodyIsAResponse) {
  SKIP_WITHOUT_NGINX();
  NginxServer nginx;
  ASSERT_NE(nginx.port(), 0) << nginx.error();
  Use({.http_version = HttpVersion::kHttp2, .ca_file = nginx.ca_file()});
  int answered = 0;
  for (const auto& r : Post(nginx.Url("/early/"), 200, std::string(100'000, 'x'))) {
    if (!r.has_value()) {
      // Unavailable, or TimedOut: libcurl 7.88 can leave an upload to a reset stream stuck
      // until its timeout (curl#11157, fixed in 8.1.1).
      EXPECT_TRUE(r.error().code() == Status::Code::kUnavailable ||
                  r.error().code() == Status::Code::kTimedOut)
          << r.error().ToString();
      continue;
    }
    ++answered;
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "early");
  }
  EXPECT_GE(answered, 30);
}

}  // namespace
}  // namespace egress::adapters
