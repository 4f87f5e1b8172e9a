// [tenants.<t>.credentials.<name>] client_cert_file / client_key_file (mTLS) and
// [platforms.<p>] ca_file / ca_path: loaded, mapped onto the service's options, checked at load
// (the key's permissions, that it is a key, that it is the certificate's), and shown by
// --print-config as paths, never as contents.

#include <string>

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "config/load_config.h"
#include "dispatcher/service/service_options_from_config.h"
#include "tests/config/config_files.h"
#include "tests/support/nginx_server.h"

namespace egress::config {
namespace {

// A credential section with a client certificate, `cert` and `key` as given.
std::string CredentialWith(const std::string& cert, const std::string& key) {
  return "[tenants.acme.credentials.m]\nplatform = \"slack\"\ntoken = \"xoxb-1\"\n"
         "client_cert_file = \"" +
         cert + "\"\nclient_key_file = \"" + key + "\"\n";
}

class ClientCertificateConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const TestCertificate mine = MakeTestCertificate("tenant-a");
    const TestCertificate other = MakeTestCertificate("other");
    key_pem_ = mine.key_pem;
    ConfigFiles::Write(cert(), mine.cert_pem);
    WriteKey(key(), mine.key_pem, 0600);
    WriteKey(files_.dir().Sub("other.key"), other.key_pem, 0600);
  }

  static void WriteKey(const std::string& path, const std::string& pem, mode_t mode) {
    ConfigFiles::Write(path, pem);
    ASSERT_EQ(::chmod(path.c_str(), mode), 0);
  }

  std::string cert() const { return files_.dir().Sub("a.pem"); }
  std::string key() const { return files_.dir().Sub("a.key"); }

  ConfigFiles files_;
  std::string key_pem_;
};

// Verifies the credential's certificate and key paths are loaded and reach the service's
// credentials, and each platform's own trust reaches the service's per-platform trust.
TEST_F(ClientCertificateConfigTest, LoadsCertificatesAndPlatformTrust) {
  Result<Config> config =
      files_.Load(CredentialWith(cert(), key()) +
                  "[tenants.acme.credentials.plain]\nplatform = \"slack\"\ntoken = \"xoxb-2\"\n"
                  "[platforms.slack]\nca_file = \"/etc/ca/slack.pem\"\n"
                  "[platforms.webhook]\nca_path = \"/etc/ca/hooks\"\n");
  ASSERT_TRUE(config.has_value()) << config.error().ToString();
  const auto& credentials = config->tenants.at("acme").credentials;
  EXPECT_EQ(credentials.at("m").client_cert_file, cert());
  EXPECT_EQ(credentials.at("m").client_key_file, key());
  EXPECT_EQ(credentials.at("plain").client_cert_file, "");
  EXPECT_EQ(config->platform(Platform::kSlack).ca_file, "/etc/ca/slack.pem");
  EXPECT_EQ(config->platform(Platform::kWebhook).ca_path, "/etc/ca/hooks");
  service::ServiceOptions o = service::ServiceOptionsFromConfig(*config);
  bool found = false;
  for (const auto& [tenant, credential] : o.credentials) {
    if (credential.name == "m") {
      found = true;
      EXPECT_EQ(credential.client_cert_file, cert());
      EXPECT_EQ(credential.client_key_file, key());
    }
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(o.trust[static_cast<size_t>(Platform::kSlack)],
            (adapters::RequestTrust{.ca_file = "/etc/ca/slack.pem"}));
  EXPECT_EQ(o.trust[static_cast<size_t>(Platform::kWebhook)],
            (adapters::RequestTrust{.ca_path = "/etc/ca/hooks"}));
  EXPECT_TRUE(o.trust[static_cast<size_t>(Platform::kLine)].empty());
}

// Verifies the load refuses a key anyone may read (typed, naming the file and its mode), one
// of the pair alone, a key that is not a key or not the certificate's, a missing file, and a
// certificate file without a certificate; no message holds a byte of a key.
TEST_F(ClientCertificateConfigTest, RefusesBadKeysAndCertificates) {
  const std::string open_key = files_.dir().Sub("open.key");
  WriteKey(open_key, key_pem_, 0644);
  const std::string group_key = files_.dir().Sub("group.key");
  WriteKey(group_key, key_pem_, 0640);
  const std::string not_key = files_.dir().Sub("not.key");
  WriteKey(not_key, "not a key\n", 0600);
  struct Case {
    std::string text;
    std::string error;  // a part of the message
  };
  const Case cases[] = {
      {CredentialWith(cert(), open_key), "tenants.acme.credentials.m.client_key_file: '" +
                                             open_key + "' is open to every user (mode 0644)"},
      {CredentialWith(cert(), not_key), "holds no unencrypted PEM private key"},
      {CredentialWith(cert(), files_.dir().Sub("other.key")), "is not the private key of"},
      {CredentialWith(cert(), files_.dir().Sub("missing.key")), "No such file or directory"},
      {CredentialWith(key(), key()), "holds no PEM certificate"},
      {"[tenants.acme.credentials.m]\nplatform = \"slack\"\ntoken = \"xoxb-1\"\n"
       "client_cert_file = \"" +
           cert() + "\"\n",
       "tenants.acme.credentials.m.client_key_file: missing"},
      {"[tenants.acme.credentials.m]\nplatform = \"webhook\"\nsecret = "
       "\"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\nclient_key_file = \"" +
           key() + "\"\n",
       "tenants.acme.credentials.m.client_cert_file: missing"},
      {"[platforms.slack]\nca_file = 3\n", "platforms.slack.ca_file: must be a string"},
  };
  const std::string key_body = key_pem_.substr(key_pem_.find('\n') + 1, 40);
  for (const Case& c : cases) {
    Result<Config> config = files_.Load(c.text);
    ASSERT_FALSE(config.has_value()) << c.text;
    EXPECT_EQ(config.error().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(config.error().message().find(c.error), std::string::npos)
        << config.error().message() << "\nwanted: " << c.error;
    EXPECT_EQ(config.error().message().find(key_body), std::string::npos);
  }
  // Readable by its group (a service group) is allowed.
  Result<Config> group = files_.Load(CredentialWith(cert(), group_key));
  EXPECT_TRUE(group.has_value()) << group.error().ToString();
}

// Verifies --print-config shows the certificate and key paths and never the key's content.
TEST_F(ClientCertificateConfigTest, PrintConfigShowsPathsNotContents) {
  ConfigFiles::Write(files_.main_path(), CredentialWith(cert(), key()));
  Result<std::string> text = RenderConfig(files_.main_path(), files_.Options());
  ASSERT_TRUE(text.has_value()) << text.error().ToString();
  EXPECT_NE(text->find(key()), std::string::npos) << *text;
  EXPECT_NE(text->find(cert()), std::string::npos) << *text;
  EXPECT_EQ(text->find("PRIVATE KEY"), std::string::npos) << *text;
  EXPECT_EQ(text->find(key_pem_.substr(key_pem_.find('\n') + 1, 40)), std::string::npos);
}

}  // namespace
}  // namespace egress::config
