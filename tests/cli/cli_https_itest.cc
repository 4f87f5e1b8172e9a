// The CLI against an https --server (a service behind a TLS proxy): libcurl verifies the
// certificate against --cacert, and a TLS failure is an error, never a silent fallback to the
// store.

#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/child_process.h"
#include "tests/support/loopback_tls_server.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"

namespace egress {
namespace {

// Verifies --cacert: trusted, the request crosses TLS and the answer (the test server's "ok",
// not the API's JSON) is read and judged; untrusted, the handshake fails with exit 3 and the
// CLI does not fall back to the store.
TEST(CliHttpsTest, VerifiesTheServerWithCacert) {
  LoopbackTlsServer server;
  ASSERT_NE(server.port(), 0);
  TempDir dir;
  const std::string ca = dir.Sub("ca.pem");
  std::ofstream(ca) << server.cert_pem();
  const std::string url = "https://127.0.0.1:" + std::to_string(server.port());
  CommandOutput trusted =
      RunCommand(BuildDir() + "/relay-egress",
                 {"stats", "--server", url, "--cacert", ca, "--data-dir", dir.Sub("absent")});
  EXPECT_EQ(trusted.exit_code, 3) << trusted.err;
  EXPECT_NE(trusted.err.find(url + "/v1/stats: the answer is not a JSON object"), std::string::npos)
      << trusted.err;
  EXPECT_GE(server.handshakes(), 2);  // the /healthz probe and /v1/stats
  const int before = server.handshakes();
  CommandOutput untrusted = RunCommand(BuildDir() + "/relay-egress",
                                       {"stats", "--server", url, "--data-dir", dir.Sub("absent")});
  EXPECT_EQ(untrusted.exit_code, 3) << untrusted.err;
  EXPECT_EQ(untrusted.err.find("no service"), std::string::npos) << untrusted.err;
  EXPECT_NE(untrusted.err.find(url + "/healthz: "), std::string::npos) << untrusted.err;
  EXPECT_EQ(server.handshakes(), before);
  CommandOutput missing = RunCommand(BuildDir() + "/relay-egress",
                                     {"stats", "--server", url, "--cacert", dir.Sub("none.pem")});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
}

}  // namespace
}  // namespace egress
