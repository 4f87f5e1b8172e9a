// relay-egress serve as a real process against strangers (docs/security.md, "The API's front
// door"): keyless bodies cost no memory, and one address holding thousands of connections does
// not shut anyone else out.

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "dispatcher/base/clock.h"
#include "tests/support/child_process.h"
#include "tests/support/http_client.h"
#include "tests/support/temp_dir.h"

namespace egress {
namespace {

constexpr char kAdminToken[] = "front-door-admin-token-0123456789";
constexpr char kAcmeKey[] = "acme-front-door-key-0123456789";

// The resident set of process `pid` in bytes (VmRSS of /proc/<pid>/status); 0 when unreadable.
size_t ResidentBytes(pid_t pid) {
  std::ifstream status(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      std::istringstream fields(line.substr(6));
      size_t kib = 0;
      fields >> kib;
      return kib << 10;
    }
  }
  return 0;
}

// A non-blocking TCP socket from `from` (a loopback address) to 127.0.0.1:`port`; -1 on error.
int ConnectFrom(const char* from, int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    return -1;
  }
  sockaddr_in local{};
  local.sin_family = AF_INET;
  inet_pton(AF_INET, from, &local.sin_addr);
  sockaddr_in remote{};
  remote.sin_family = AF_INET;
  remote.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0 ||
      (connect(fd, reinterpret_cast<sockaddr*>(&remote), sizeof remote) != 0 &&
       errno != EINPROGRESS)) {
    close(fd);
    return -1;
  }
  return fd;
}

// Raises this process's soft open-file limit to `want` (or its hard limit); what it got. A
// child process inherits it.
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

class FrontDoorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = dir_.Sub("relay-egress.toml");
    std::ofstream(config_) << "[server]\nadmin_token = \"" << kAdminToken
                           << "\"\nlisten = \"127.0.0.1:0\"\ndata_dir = \"" << dir_.Sub("store")
                           << "\"\n"
                           << "[platforms.webhook]\nallow_private_networks = true\n"
                           << "[tenants.acme]\napi_keys = [\"" << kAcmeKey << "\"]\n"
                           << "[tenants.acme.credentials.hooks]\nplatform = \"webhook\"\n"
                           << "secret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n";
  }

  int StartService() {
    return service_.Start(
        BuildDir() + "/relay-egress",
        {"serve", "--config", config_, "--profiles-dir", SourceDir() + "/config/profiles"});
  }

  TempDir dir_;
  std::string config_;
  ChildProcess service_;
};

// Verifies the issue's bound: 100 connections without a key, each sending a 15 MiB chunked
// batch body (under the route's 16 MiB limit) as fast as the server takes it, are each answered
// 401 from the header alone, and the service's resident set stays under 64 MiB above idle
// while they send and after they close. The server once read each body whole before looking
// for a key: these took it from 32 MB to 1.6 GB, which stayed allocated.
TEST_F(FrontDoorTest, KeylessBodiesCostNoMemory) {
  constexpr int kConnections = 100;
  constexpr size_t kBody = 15 << 20;
  constexpr size_t kLimit = 64 << 20;
  const int port = StartService();
  ASSERT_NE(port, 0) << service_.error();
  // Idle: after one authenticated request, so the loop and its pools are warm.
  ASSERT_EQ(HttpCallAs(kAcmeKey, port, "GET", "/v1/stats").status, 200);
  const size_t idle = ResidentBytes(service_.pid());
  ASSERT_GT(idle, 0u);

  std::atomic<bool> sending{true};
  std::atomic<size_t> peak{idle};
  std::thread sampler([&] {
    while (sending) {
      peak = std::max(peak.load(), ResidentBytes(service_.pid()));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });

  struct Conn {
    int fd = -1;
    size_t sent = 0;  // of the body, after the header
    std::string header;
    std::string answer;
    bool done = false;
  };
  std::vector<Conn> conns(kConnections);
  // From four addresses: one may hold 64 connections (max_connections_per_address).
  const char* const kFrom[] = {"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"};
  for (size_t i = 0; i < conns.size(); ++i) {
    Conn& c = conns[i];
    c.fd = ConnectFrom(kFrom[i % 4], port);
    ASSERT_GE(c.fd, 0);
    c.header =
        "POST /v1/deliveries/batch HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\n\r\n";
  }
  // One chunk of 1 MiB ("100000" hex), sent 15 times: the whole body is 15 MiB.
  const std::string chunk = "100000\r\n" + std::string(1 << 20, ' ') + "\r\n";
  const SystemClock clock;
  const SteadyTime deadline = clock.Now() + std::chrono::seconds(60);
  size_t open = conns.size();
  std::vector<pollfd> fds(conns.size());
  while (open > 0 && clock.Now() < deadline) {
    for (size_t i = 0; i < conns.size(); ++i) {
      fds[i] = {.fd = conns[i].done ? -1 : conns[i].fd, .events = POLLIN, .revents = 0};
      if (!conns[i].done && conns[i].sent < kBody / chunk.size() * chunk.size() + chunk.size()) {
        fds[i].events |= POLLOUT;
      }
    }
    poll(fds.data(), fds.size(), 100);
    for (size_t i = 0; i < conns.size(); ++i) {
      Conn& c = conns[i];
      if (c.done) {
        continue;
      }
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        char buf[4096];
        const ssize_t n = read(c.fd, buf, sizeof buf);
        if (n > 0) {
          c.answer.append(buf, static_cast<size_t>(n));
        }
        // A client that has its answer stops sending (as curl does): done.
        if (n <= 0 || c.answer.find("\r\n\r\n") != std::string::npos) {
          c.done = true;
          --open;
          continue;
        }
      }
      if (fds[i].revents & POLLOUT) {
        if (!c.header.empty()) {
          const ssize_t n = send(c.fd, c.header.data(), c.header.size(), MSG_NOSIGNAL);
          if (n > 0) {
            c.header.erase(0, static_cast<size_t>(n));
          }
        } else if (c.sent < kBody) {
          const size_t at = c.sent % chunk.size();
          const ssize_t n = send(c.fd, chunk.data() + at, chunk.size() - at, MSG_NOSIGNAL);
          if (n > 0) {
            c.sent += static_cast<size_t>(n);
          }
        }
      }
    }
  }
  int unauthorized = 0;
  for (Conn& c : conns) {
    unauthorized += c.answer.rfind("HTTP/1.1 401", 0) == 0 ? 1 : 0;
    close(c.fd);
  }
  EXPECT_EQ(unauthorized, kConnections);
  // What they sent before their answers came (each at most the socket buffers' worth).
  size_t sent = 0;
  for (const Conn& c : conns) {
    sent += c.sent;
  }
  sending = false;
  sampler.join();
  EXPECT_LT(peak.load(), idle + kLimit)
      << "idle " << (idle >> 20) << " MiB, peak " << (peak.load() >> 20) << " MiB";
  // After they closed (the release hook runs a second after large bodies are freed).
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const size_t after = ResidentBytes(service_.pid());
  EXPECT_LT(after, idle + kLimit) << "idle " << (idle >> 20) << " MiB, after " << (after >> 20)
                                  << " MiB";
  RecordProperty("idle_mib", static_cast<int>(idle >> 20));
  RecordProperty("peak_mib", static_cast<int>(peak.load() >> 20));
  RecordProperty("after_mib", static_cast<int>(after >> 20));
  RecordProperty("sent_before_answers_mib", static_cast<int>(sent >> 20));
  // The same batch with the key is read and answered (its body is not a batch: 400).
  const TestResponse keyed =
      HttpCallAs(kAcmeKey, port, "POST", "/v1/deliveries/batch", std::string(1 << 20, ' '));
  EXPECT_EQ(keyed.status, 400) << keyed.body;
}

// Verifies the issue's bound: 4,100 idle connections from one address (more than the 4,096
// connection slots) shut nobody else out: the address holds its 64 (max_connections_per_address)
// and the rest are closed as they come, while another address's /healthz and a tenant's intake
// answer within 100 ms (the best of five calls each, so that one slow scheduling of this noisy
// machine does not decide it). Before the cap, the 4,100 took every slot for the 60 s read
// timeout.
TEST_F(FrontDoorTest, OneAddressCannotTakeEveryConnection) {
  constexpr int kIdle = 4100;
  if (RaiseFileLimit(kIdle + 1024) < kIdle + 1024) {
    GTEST_SKIP() << "the open-file hard limit is under " << kIdle + 1024;
  }
  const int port = StartService();
  ASSERT_NE(port, 0) << service_.error();
  std::vector<int> idle;
  for (int i = 0; i < kIdle; ++i) {
    const int fd = ConnectFrom("127.0.0.1", port);
    ASSERT_GE(fd, 0) << i;
    idle.push_back(fd);
  }
  // Wait until the service has taken them all (accepted or closed).
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const SystemClock clock;
  const auto best_of_five = [&](auto call) {
    Millis best = Millis::max();
    for (int i = 0; i < 5; ++i) {
      const SteadyTime start = clock.Now();
      call();
      best = std::min(best, std::chrono::duration_cast<Millis>(clock.Now() - start));
    }
    return best;
  };
  const std::string delivery = R"({"tenant":"acme","platform":"webhook",)"
                               R"("destination":"http://127.0.0.1:9/hook","credential":"hooks",)"
                               R"("payload":{"text":"hi"}})";
  const Millis health = best_of_five([&] {
    const TestResponse r = HttpCallFrom("127.0.0.2", port, "GET", "/healthz");
    EXPECT_EQ(r.status, 200) << r.body;
  });
  const Millis intake = best_of_five([&] {
    const TestResponse r = HttpCallFrom("127.0.0.2", port, "POST", "/v1/deliveries", delivery,
                                        {{"Authorization", std::string("Bearer ") + kAcmeKey}});
    EXPECT_EQ(r.status, 202) << r.body;
  });
  EXPECT_LT(health.count(), 100);
  EXPECT_LT(intake.count(), 100);
  RecordProperty("healthz_ms", static_cast<int>(health.count()));
  RecordProperty("intake_ms", static_cast<int>(intake.count()));
  for (int fd : idle) {
    close(fd);
  }
}

}  // namespace
}  // namespace egress
