#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <future>
#include <stdexcept>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include "dispatcher/base/clock.h"
#include "dispatcher/service/api/http_server.h"
#include "tests/support/http_client.h"

namespace egress::service {
namespace {

namespace http = boost::beast::http;

HttpResponse Ok(const HttpRequest& request) {
  HttpResponse res{http::status::ok, request.version()};
  res.body() = "ok";
  res.prepare_payload();
  return res;
}

// Verifies the server's guard: a handler that throws gets a 500 envelope instead of ending the
// process, a late answer to that request is harmless (the 500 was its one answer), and the
// server goes on serving.
TEST(HttpServerTest, HandlerThatThrowsGetsA500AndServerLives) {
  boost::asio::io_context io;
  Respond late;
  auto server = HttpServer::Start(
      io, {.listen = {.host = "127.0.0.1", .port = 0}},
      [&late](HttpRequest&& request, const boost::asio::ip::address&, Respond respond) {
        if (request.target() == "/throw") {
          throw std::runtime_error("bug in a handler");
        }
        if (request.target() == "/throw-after-keeping") {
          late = respond;  // kept, and called after the throw
          throw 42;
        }
        respond(Ok(request));
      });
  ASSERT_TRUE(server.has_value()) << server.error().ToString();
  const int port = (*server)->endpoint().port();
  std::thread loop([&io] {
    auto work = boost::asio::make_work_guard(io);
    io.run();
  });

  TestResponse thrown = HttpCall(port, "GET", "/throw");
  EXPECT_EQ(thrown.status, 500);
  EXPECT_EQ(thrown.Json()["error"], "internal") << thrown.body;
  TestResponse kept = HttpCall(port, "GET", "/throw-after-keeping");
  EXPECT_EQ(kept.status, 500);
  boost::asio::post(io, [&late] {
    HttpRequest req{http::verb::get, "/", 11};
    late(Ok(req));  // dropped: the 500 answered this request
  });
  TestResponse ok = HttpCall(port, "GET", "/fine");
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, "ok");

  boost::asio::post(io, [&] {
    server->reset();
    io.stop();
  });
  loop.join();
}

// A server on its own loop thread, stopped and destroyed on that thread.
class RunningServer {
 public:
  explicit RunningServer(HttpServerOptions options, HttpHandler handler = nullptr) {
    options.listen = {.host = "127.0.0.1", .port = 0};
    if (!handler) {
      handler = [](HttpRequest&& request, const boost::asio::ip::address&, Respond respond) {
        respond(Ok(request));
      };
    }
    auto server = HttpServer::Start(io_, options, std::move(handler));
    EXPECT_TRUE(server.has_value()) << server.error().ToString();
    server_ = std::move(*server);
    port_ = server_->endpoint().port();
    loop_ = std::thread([this] {
      auto work = boost::asio::make_work_guard(io_);
      io_.run();
    });
  }
  ~RunningServer() {
    boost::asio::post(io_, [this] {
      server_.reset();
      io_.stop();
    });
    loop_.join();
  }

  int port() const { return port_; }
  // A copy of the counters, read on the loop thread.
  HttpServerStats Stats() {
    std::promise<HttpServerStats> got;
    boost::asio::post(io_, [&] { got.set_value(server_->stats()); });
    return got.get_future().get();
  }
  // Polls the counters until `done` holds or `limit` passes (liveness, not speed).
  bool WaitFor(const std::function<bool(const HttpServerStats&)>& done,
               std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    for (auto waited = std::chrono::milliseconds(0); waited < limit;
         waited += std::chrono::milliseconds(10)) {
      if (done(Stats())) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return done(Stats());
  }

 private:
  boost::asio::io_context io_;
  std::unique_ptr<HttpServer> server_;
  int port_ = 0;
  std::thread loop_;
};

// A blocking client socket to the server's port.
class RawClient {
 public:
  // Connects at once unless `connect` is false (then Connect() does).
  explicit RawClient(int port, bool connect = true) : port_(port), socket_(io_) {
    if (connect) {
      Connect();
    }
  }
  bool Connect() {
    boost::system::error_code ec;
    socket_.connect({boost::asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port_)}, ec);
    connected_ = !ec;
    return connected_;
  }
  bool connected() const { return connected_; }
  void Send(std::string_view bytes) {
    boost::system::error_code ec;
    boost::asio::write(socket_, boost::asio::buffer(bytes.data(), bytes.size()), ec);
  }
  // Blocks until the server closes the connection (true) or sends bytes (false).
  bool ReadsEof() {
    char c;
    boost::system::error_code ec;
    socket_.read_some(boost::asio::buffer(&c, 1), ec);
    return ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset;
  }

 private:
  int port_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  bool connected_ = false;
};

// Raises this process's soft open-file limit to `want` (or its hard limit); what it got.
rlim_t RaiseFileLimit(rlim_t want) {
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur < want) {
    limit.rlim_cur = limit.rlim_max == RLIM_INFINITY ? want : std::min(want, limit.rlim_max);
    setrlimit(RLIMIT_NOFILE, &limit);
    getrlimit(RLIMIT_NOFILE, &limit);
  }
  return limit.rlim_cur;
}

// Verifies server.max_connections: a connection over the cap is closed at once (counted as
// refused) and the ones under it are served; once one closes, a new one is served again.
TEST(HttpServerTest, ConnectionOverTheCapIsClosedAtOnce) {
  RunningServer server({.max_connections = 3});
  std::vector<std::unique_ptr<RawClient>> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(std::make_unique<RawClient>(server.port()));
    ASSERT_TRUE(held.back()->connected());
  }
  ASSERT_TRUE(server.WaitFor([](const HttpServerStats& s) { return s.open == 3; }));
  RawClient extra(server.port());
  ASSERT_TRUE(extra.connected());  // the kernel accepts it; the server closes it
  EXPECT_TRUE(extra.ReadsEof());
  EXPECT_EQ(server.Stats().refused, 1u);
  held.pop_back();
  ASSERT_TRUE(server.WaitFor([](const HttpServerStats& s) { return s.open == 2; }));
  EXPECT_EQ(HttpCall(server.port(), "GET", "/healthz").status, 200);
}

// Verifies the bound: 2,000 connections stalled in the middle of a request cost their
// sockets, not the loop; /healthz is answered within 100 ms while they hang (the best of five
// calls, so one slow scheduling of this noisy machine's test process does not decide it).
TEST(HttpServerTest, StalledConnectionsDoNotDelayOthers) {
  constexpr int kStalled = 2000;
  if (RaiseFileLimit(2 * kStalled + 256) < 2 * kStalled + 256) {
    GTEST_SKIP() << "the open-file hard limit is under " << 2 * kStalled + 256;
  }
  RunningServer server({.max_connections = 4096});
  std::vector<std::unique_ptr<RawClient>> stalled;
  for (int i = 0; i < kStalled; ++i) {
    stalled.push_back(std::make_unique<RawClient>(server.port()));
    ASSERT_TRUE(stalled.back()->connected()) << i;
    stalled.back()->Send("POST /v1/deliveries HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{");
  }
  ASSERT_TRUE(server.WaitFor([](const HttpServerStats& s) { return s.open == kStalled; }));
  SystemClock clock;
  Millis best = Millis::max();
  for (int i = 0; i < 5; ++i) {
    const SteadyTime start = clock.Now();
    const TestResponse health = HttpCall(server.port(), "GET", "/healthz");
    ASSERT_EQ(health.status, 200) << health.body;
    best = std::min(best, std::chrono::duration_cast<Millis>(clock.Now() - start));
  }
  EXPECT_LT(best.count(), 100);
}

// Verifies the read deadline: a request stalled half-way is closed when read_timeout passes,
// and counted.
TEST(HttpServerTest, StalledRequestIsClosedAtTheReadDeadline) {
  RunningServer server({.read_timeout = Millis(200)});
  RawClient client(server.port());
  ASSERT_TRUE(client.connected());
  client.Send("GET /healthz HTTP/1.1\r\nHost:");
  EXPECT_TRUE(client.ReadsEof());
  EXPECT_TRUE(server.WaitFor([](const HttpServerStats& s) { return s.read_timeouts == 1; }));
}

// Verifies the write deadline: a client that asks for a large answer and never reads it is
// closed when write_timeout passes; the server's connection count returns to zero.
TEST(HttpServerTest, ClientThatStopsReadingIsClosedAtTheWriteDeadline) {
  RunningServer server({.write_timeout = Millis(300)},
                       [](HttpRequest&& request, const boost::asio::ip::address&, Respond respond) {
                         HttpResponse res{http::status::ok, request.version()};
                         res.body().assign(
                             64 << 20, 'x');  // far more than the socket buffers on both sides hold
                         res.prepare_payload();
                         respond(std::move(res));
                       });
  RawClient client(server.port());
  ASSERT_TRUE(client.connected());
  client.Send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_TRUE(server.WaitFor(
      [](const HttpServerStats& s) { return s.write_timeouts == 1 && s.open == 0; }));
}

// Verifies the per-request body limit: the limit the callback gives the request line holds
// (413 and the connection closes), and another route keeps its own.
TEST(HttpServerTest, BodyLimitFollowsTheRequestLine) {
  RunningServer server({.body_limit = [](http::verb, std::string_view target) -> size_t {
    return target == "/small" ? 10 : 1000;
  }});
  const std::string body(20, 'x');
  TestResponse small = HttpCall(server.port(), "POST", "/small", body);
  EXPECT_EQ(small.status, 413);
  EXPECT_EQ(small.Json()["error"], "payload_too_large");
  EXPECT_EQ(HttpCall(server.port(), "POST", "/big", body).status, 200);
}

// Verifies that a refused body still gets its answer: the client is sending 32 MiB (more than
// the socket buffers on both sides hold) when the server answers 413; the server reads and drops
// the rest before closing, so the client does not meet a reset before it reads the 413 (it did,
// now and then, when the server closed at once).
TEST(HttpServerTest, RefusedBodyIsDrainedSoTheAnswerArrives) {
  RunningServer server({.body_limit = [](http::verb, std::string_view) -> size_t { return 10; }});
  const std::string body(32 << 20, 'x');
  for (int i = 0; i < 5; ++i) {
    TestResponse refused = HttpCall(server.port(), "POST", "/small", body);
    EXPECT_EQ(refused.status, 413) << "request " << i << ": " << refused.body;
  }
}

// Verifies the accept back-off: with this process out of file descriptors, a waiting connection
// makes accept() fail; the server backs off (a handful of failures, not a busy loop of them)
// and serves the connection once descriptors are free again.
TEST(HttpServerTest, AcceptBacksOffWhenOutOfDescriptorsAndRecovers) {
  RunningServer server({.accept_backoff = Millis(50)});
  auto client = std::make_unique<RawClient>(server.port(), /*connect=*/false);
  rlimit saved{};
  getrlimit(RLIMIT_NOFILE, &saved);
  rlimit low = saved;
  low.rlim_cur = 256;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  // Take every free descriptor but one, which the client socket takes.
  std::vector<int> fillers;
  for (;;) {
    const int fd = open("/dev/null", O_RDONLY);
    if (fd < 0) {
      break;
    }
    fillers.push_back(fd);
  }
  ASSERT_FALSE(fillers.empty());
  close(fillers.back());
  fillers.pop_back();
  ASSERT_TRUE(client->Connect());
  ASSERT_TRUE(server.WaitFor([](const HttpServerStats& s) { return s.accept_failures >= 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const uint64_t failures = server.Stats().accept_failures;
  // 50 + 100 + 200 + 400 ms of back-off: a few failures in half a second; a loop retrying at
  // once would have failed hundreds of thousands of times.
  EXPECT_LE(failures, 10u);
  for (int fd : fillers) {
    close(fd);
  }
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);
  EXPECT_TRUE(server.WaitFor([](const HttpServerStats& s) { return s.accepted >= 1; }));
  client->Send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_FALSE(client->ReadsEof());  // bytes of an answer
  EXPECT_EQ(HttpCall(server.port(), "GET", "/healthz").status, 200);
}

}  // namespace
}  // namespace egress::service
