#include <stdexcept>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <gtest/gtest.h>

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
  auto server = HttpServer::Start(io, {.listen = {.host = "127.0.0.1", .port = 0}},
                                  [&late](HttpRequest&& request, Respond respond) {
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

}  // namespace
}  // namespace egress::service
