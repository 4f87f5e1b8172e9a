// RedisConnection against a Redis that answers what no Redis should: replies too large to hold
// are refused while hiredis parses them (adapters/redis_reply_limits.h), and the connection is
// dropped with why, instead of allocating what the reply announces.

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include <arpa/inet.h>
#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "adapters/redis_connection.h"
#include "dispatcher/base/clock.h"

namespace egress::adapters {
namespace {

// A server on loopback that takes one connection, answers its first command (the connection's
// PING) with +PONG and its second with `answer`, then holds the connection open until the end.
class HostileRedis {
 public:
  explicit HostileRedis(std::string answer) : answer_(std::move(answer)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(listener_, 4) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return;
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~HostileRedis() {
    stop_ = true;
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    if (thread_.joinable()) {
      thread_.join();
    }
  }
  int port() const { return port_; }

 private:
  void Serve() {
    const int fd = ::accept(listener_, nullptr, nullptr);
    if (fd < 0) {
      return;
    }
    char buf[4096];
    for (int command = 0; command < 2 && !stop_; ++command) {
      if (::read(fd, buf, sizeof(buf)) <= 0) {
        break;
      }
      const std::string& out = command == 0 ? pong_ : answer_;
      for (size_t sent = 0; sent < out.size() && !stop_;) {
        const ssize_t n = ::send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) {
          break;
        }
        sent += static_cast<size_t>(n);
      }
    }
    while (!stop_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::close(fd);
  }

  std::string answer_;
  const std::string pong_ = "+PONG\r\n";
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Sends one command to `server` and returns why the connection went down ("" when it did not
// within the command's 5 s timeout, which a refused reply must not wait for).
std::string DropReason(const HostileRedis& server, Millis* took) {
  boost::asio::io_context io;
  SystemClock clock;
  RedisConnectionOptions options;
  options.port = static_cast<uint16_t>(server.port());
  options.command_timeout = Millis(5000);
  RedisConnection connection(io, clock, options);
  std::string why;
  connection.SetStateObserver([&](bool up, const std::string& reason) {
    if (!up && why.empty()) {
      why = reason;
    }
  });
  connection.Start();
  for (int i = 0; i < 5000 && !connection.up(); ++i) {
    io.run_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(connection.up());
  std::optional<Result<RedisReply>> reply;
  const SteadyTime sent = clock.Now();
  connection.Command({"GET", "k"}, [&](Result<RedisReply> r) { reply = std::move(r); });
  for (int i = 0; i < 4000 && !reply.has_value(); ++i) {
    io.run_for(std::chrono::milliseconds(1));
  }
  *took = std::chrono::duration_cast<Millis>(clock.Now() - sent);
  EXPECT_TRUE(reply.has_value());
  EXPECT_FALSE(reply.has_value() && reply->has_value()) << "the reply was taken";
  return why;
}

// Verifies that an array announcing 100,000,000 elements is refused at its header (no 800 MB of
// element pointers allocated), at once rather than at the command's timeout.
TEST(RedisReplyLimitsTest, HugeArrayIsRefusedAtItsHeader) {
  HostileRedis server("*100000000\r\n");
  ASSERT_NE(server.port(), 0);
  Millis took{0};
  const std::string why = DropReason(server, &took);
  EXPECT_NE(why.find("65,536 elements"), std::string::npos) << why;
  EXPECT_LT(took, Millis(3000));
}

// Verifies that a string is not buffered past 32 MiB while it arrives (hiredis parses a string
// only once all of it is in).
TEST(RedisReplyLimitsTest, HugeStringIsNotBuffered) {
  HostileRedis server("$100000000\r\n" + std::string(40 << 20, 'x'));
  ASSERT_NE(server.port(), 0);
  Millis took{0};
  const std::string why = DropReason(server, &took);
  EXPECT_NE(why.find("32 MiB"), std::string::npos) << why;
}

// Verifies the count over every level: arrays within the per-array bound whose elements add up
// to more than 1,048,576 objects in one reply.
TEST(RedisReplyLimitsTest, TooManyObjectsInOneReplyAreRefused) {
  std::string answer = "*20\r\n";
  for (int i = 0; i < 20; ++i) {
    answer += "*60000\r\n";
    for (int j = 0; j < 60000; ++j) {
      answer += ":1\r\n";
    }
  }
  HostileRedis server(answer);
  ASSERT_NE(server.port(), 0);
  Millis took{0};
  const std::string why = DropReason(server, &took);
  EXPECT_NE(why.find("1,048,576 objects"), std::string::npos) << why;
}

}  // namespace
}  // namespace egress::adapters
