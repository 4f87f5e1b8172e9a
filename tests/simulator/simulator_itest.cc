// Starts the real relay-egress-sim binary on a loopback port and talks HTTP/1.1 to it: one
// keep-alive connection carries Slack, Discord, LINE, webhook and control requests; a
// configured connection reset is seen as one.

#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include "tests/support/child_process.h"

extern char** environ;

namespace egress::sim {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

std::string SimulatorPath() { return BuildDir() + "/relay-egress-sim"; }

// A blocking keep-alive client for one connection to 127.0.0.1.
class Client {
 public:
  explicit Client(int port) : socket_(ioc_) {
    beast::error_code ec;
    socket_.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
    EXPECT_FALSE(ec) << ec.message();
  }

  // Returns the response; status 0 when the connection failed (e.g. was reset).
  http::response<http::string_body> Send(
      http::verb verb, const std::string& target, const std::string& body,
      std::initializer_list<std::pair<std::string, std::string>> headers = {}) {
    http::request<http::string_body> req{verb, target, 11};
    req.set(http::field::host, "127.0.0.1");
    req.keep_alive(true);
    for (const auto& [name, value] : headers) {
      req.set(name, value);
    }
    req.body() = body;
    req.prepare_payload();
    http::response<http::string_body> res;
    beast::error_code ec;
    http::write(socket_, req, ec);
    if (!ec) {
      http::read(socket_, buffer_, res, ec);
    }
    if (ec) {
      last_error_ = ec;
      res.result(0);
    }
    return res;
  }

  beast::error_code last_error() const { return last_error_; }

 private:
  asio::io_context ioc_;
  tcp::socket socket_;
  beast::flat_buffer buffer_;
  beast::error_code last_error_;
};

// Verifies the binary serves all four platforms and the control endpoints over one loopback
// keep-alive connection, and that stats reflect what was sent.
TEST(SimulatorITest, ServesPlatformsOverLoopback) {
  ChildProcess process;
  int port = process.Start(SimulatorPath(), {"--listen", "127.0.0.1", "--port", "0"});
  ASSERT_GT(port, 0) << process.error();
  Client client(port);

  auto config = client.Send(http::verb::post, "/_sim/config",
                            R"({"slack":{"channel_burst":1,"retry_after_s":30},
                                "hooks":{"bye":{"faults":{"reset_first":1}}}})");
  ASSERT_EQ(config.result_int(), 200) << config.body();

  auto slack_headers = {std::pair<std::string, std::string>{"Authorization", "Bearer xoxb-1"}};
  auto ok = client.Send(http::verb::post, "/api/chat.postMessage",
                        R"({"channel":"C1","text":"hi"})", slack_headers);
  EXPECT_EQ(ok.result_int(), 200);
  EXPECT_EQ(nlohmann::json::parse(ok.body())["ok"], true);
  auto limited = client.Send(http::verb::post, "/api/chat.postMessage",
                             R"({"channel":"C1","text":"hi"})", slack_headers);
  EXPECT_EQ(limited.result_int(), 429);
  EXPECT_EQ(limited[http::field::retry_after], "30");

  auto discord = client.Send(http::verb::post, "/api/v10/channels/42/messages",
                             R"({"content":"x"})", {{"Authorization", "Bot b1"}});
  EXPECT_EQ(discord.result_int(), 200);
  EXPECT_EQ(discord["X-RateLimit-Limit"], "5");

  auto line = client.Send(http::verb::post, "/v2/bot/message/push",
                          R"({"to":"U1","messages":[{"type":"text","text":"a"}]})",
                          {{"Authorization", "Bearer ch1"}});
  EXPECT_EQ(line.result_int(), 200);
  EXPECT_FALSE(line["X-Line-Request-Id"].empty());

  auto hook = client.Send(http::verb::post, "/hooks/h1", "{}", {{"webhook-id", "msg_1"}});
  EXPECT_EQ(hook.result_int(), 200);

  auto stats = client.Send(http::verb::get, "/_sim/stats", "");
  ASSERT_EQ(stats.result_int(), 200);
  nlohmann::json doc = nlohmann::json::parse(stats.body());
  EXPECT_EQ(doc["destinations"]["slack:xoxb-1:C1"]["requests"], 2);
  EXPECT_EQ(doc["destinations"]["slack:xoxb-1:C1"]["rate_limited"], 1);
  EXPECT_EQ(doc["totals"]["accepted"], 4);

  // A configured reset closes the connection without an answer.
  Client second(port);
  auto reset = second.Send(http::verb::post, "/hooks/bye", "{}");
  EXPECT_EQ(reset.result_int(), 0);
  EXPECT_TRUE(second.last_error());

  auto cleared = client.Send(http::verb::post, "/_sim/reset", "");
  EXPECT_EQ(cleared.result_int(), 200);
  process.Signal(SIGTERM);
}

// Verifies the binary refuses to bind anything but loopback.
// Verifies the stats say how late the server's loop ran: a process stopped for 200 ms (SIGSTOP)
// handled nothing meanwhile, so a request that arrived then was stamped up to that late; a reset
// starts the figure afresh.
TEST(SimulatorITest, StatsSayHowLateTheLoopRan) {
  ChildProcess process;
  int port = process.Start(SimulatorPath(), {"--listen", "127.0.0.1", "--port", "0"});
  ASSERT_GT(port, 0) << process.error();
  Client client(port);
  ASSERT_EQ(client.Send(http::verb::post, "/_sim/reset", "").result_int(), 200);
  ASSERT_EQ(kill(process.pid(), SIGSTOP), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_EQ(kill(process.pid(), SIGCONT), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a tick after the stop
  auto stats = client.Send(http::verb::get, "/_sim/stats", "");
  ASSERT_EQ(stats.result_int(), 200);
  EXPECT_GE(nlohmann::json::parse(stats.body())["loop_late_max_ms"].get<int64_t>(), 150)
      << stats.body();
  ASSERT_EQ(client.Send(http::verb::post, "/_sim/reset", "").result_int(), 200);
  stats = client.Send(http::verb::get, "/_sim/stats", "");
  EXPECT_LT(nlohmann::json::parse(stats.body())["loop_late_max_ms"].get<int64_t>(), 150)
      << stats.body();
}

TEST(SimulatorITest, RefusesNonLoopbackAddress) {
  const std::string path = SimulatorPath();
  char* argv[] = {const_cast<char*>(path.c_str()), const_cast<char*>("--listen"),
                  const_cast<char*>("0.0.0.0"), nullptr};
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, path.c_str(), nullptr, nullptr, argv, environ), 0) << path;
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
}

}  // namespace
}  // namespace egress::sim
