// The real relay-egress-sim binary in TLS mode: ALPN picks HTTP/2 or HTTP/1.1, the CA it writes
// verifies its certificate, hostile bytes on an h2 connection end that connection and nothing
// else, a reset fault resets one stream, and bad TLS flags are refused with exit code 2.

#include <unistd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include "tests/support/child_process.h"
#include "tests/support/run_command.h"
#include "tests/support/sim_process.h"

namespace egress::sim {
namespace {

// A raw TLS connection to 127.0.0.1:`port` offering `alpn`, verification off (the bytes sent
// are the point, not the peer). Empty `protocol()` when the handshake failed.
class RawTls {
 public:
  RawTls(int port, const std::string& alpn) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    std::string wire(1, static_cast<char>(alpn.size()));
    wire += alpn;
    SSL_CTX_set_alpn_protos(ctx_, reinterpret_cast<const unsigned char*>(wire.data()),
                            static_cast<unsigned>(wire.size()));
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    timeval tv{.tv_sec = 5, .tv_usec = 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      return;
    }
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    if (SSL_connect(ssl_) == 1) {
      const unsigned char* p = nullptr;
      unsigned int n = 0;
      SSL_get0_alpn_selected(ssl_, &p, &n);
      protocol_ = n > 0 ? std::string(reinterpret_cast<const char*>(p), n) : "none";
    }
  }
  ~RawTls() {
    SSL_free(ssl_);
    SSL_CTX_free(ctx_);
    close(fd_);
  }

  const std::string& protocol() const { return protocol_; }

  // Sends `bytes`, then reads until the server closes or 5 s pass; returns the bytes read.
  size_t SendAndDrain(const std::string& bytes) {
    SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size()));
    size_t total = 0;
    char buf[4096];
    int n = 0;
    while ((n = SSL_read(ssl_, buf, sizeof(buf))) > 0) {
      total += static_cast<size_t>(n);
    }
    return total;
  }

 private:
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  int fd_ = -1;
  std::string protocol_;
};

constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

std::string Frame(uint32_t length, uint8_t type, uint8_t flags, uint32_t stream,
                  const std::string& payload) {
  std::string f;
  f.push_back(static_cast<char>(length >> 16));
  f.push_back(static_cast<char>(length >> 8));
  f.push_back(static_cast<char>(length));
  f.push_back(static_cast<char>(type));
  f.push_back(static_cast<char>(flags));
  for (int shift = 24; shift >= 0; shift -= 8) {
    f.push_back(static_cast<char>(stream >> shift));
  }
  return f + payload;
}

// Verifies ALPN: with the defaults h2 is chosen for a client offering h2, HTTP/1.1 for one
// offering only http/1.1; with --alpn http/1.1 a client offering only h2 gets no protocol.
TEST(SimulatorTlsITest, AlpnChoosesTheFraming) {
  SimProcess both;
  ASSERT_TRUE(both.Start(SimWire::kHttps2).ok());
  EXPECT_EQ(RawTls(both.port(), "h2").protocol(), "h2");
  EXPECT_EQ(RawTls(both.port(), "http/1.1").protocol(), "http/1.1");
  SimProcess h1;
  ASSERT_TRUE(h1.Start(SimWire::kHttps1).ok());
  EXPECT_EQ(RawTls(h1.port(), "h2").protocol(), "none");
  EXPECT_EQ(RawTls(h1.port(), "http/1.1").protocol(), "http/1.1");
}

// Verifies that hostile bytes on an HTTP/2 connection end that connection only: random bytes
// instead of the preface, an oversized frame, a HEADERS frame of garbage, a DATA frame on a
// stream never opened, a flood of PINGs; the simulator answers the next request.
TEST(SimulatorTlsITest, HostileHttp2InputEndsOnlyThatConnection) {
  SimProcess sim;
  ASSERT_TRUE(sim.Start(SimWire::kHttps2).ok());
  std::string pings;
  for (int i = 0; i < 5000; ++i) {
    pings += Frame(8, 0x6, 0, 0, std::string(8, 'p'));
  }
  const std::vector<std::string> inputs = {
      std::string(4096, '\xff'),
      kPreface + Frame(0xffffff, 0x0, 0, 1, std::string(1000, 'x')),
      kPreface + Frame(0, 0x4, 0, 0, "") + Frame(64, 0x1, 0x5, 1, std::string(64, '\x7f')),
      kPreface + Frame(0, 0x4, 0, 0, "") + Frame(10, 0x0, 0x1, 7, std::string(10, 'd')),
      kPreface + Frame(0, 0x4, 0, 0, "") + pings,
  };
  for (const std::string& input : inputs) {
    RawTls conn(sim.port(), "h2");
    ASSERT_EQ(conn.protocol(), "h2");
    conn.SendAndDrain(input);  // ends when the simulator closes the connection
  }
  TestResponse after = sim.Call("POST", "/hooks/after", R"({"n":1})");
  EXPECT_EQ(after.status, 200) << after.body;
  EXPECT_EQ(sim.Stats()["protocols"]["h2"], 1);
}

// Verifies that a configured connection reset is a transport error over HTTP/2 (the stream is
// reset, the request gets no response) and leaves the next request on the connection pool alone.
TEST(SimulatorTlsITest, ResetFaultResetsTheStream) {
  SimProcess sim;
  ASSERT_TRUE(sim.Start(SimWire::kHttps2).ok());
  ASSERT_EQ(sim.Configure({{"hooks", {{"reset", {{"faults", {{"reset_first", -1}}}}}}}})["hooks"]
                .is_object(),
            true);
  TestResponse reset = sim.Call("POST", "/hooks/reset", "{}");
  EXPECT_EQ(reset.status, 0) << reset.body;
  EXPECT_EQ(sim.Call("POST", "/hooks/fine", "{}").status, 200);
}

// Verifies that bad TLS flags are refused with exit code 2 and a message.
TEST(SimulatorTlsITest, RefusesBadTlsFlags) {
  const std::string path = BuildDir() + "/relay-egress-sim";
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--tls", "--alpn", "spdy/3"},
                                             {"--tls", "--alpn", ""},
                                             {"--tls", "--tls-names", "a,,b"},
                                             {"--tls-ca-out", "ca.pem"},
                                             {"--tls", "--h2-max-streams", "0"},
                                             {"--port", "99999"}}) {
    CommandOutput out = RunCommand(path, args);
    EXPECT_EQ(out.exit_code, 2) << args[1] << " " << out.err;
    EXPECT_FALSE(out.err.empty());
  }
}

}  // namespace
}  // namespace egress::sim
