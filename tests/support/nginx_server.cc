#include "tests/support/nginx_server.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <random>
#include <stdexcept>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include "tests/support/loopback_port.h"

namespace egress {
namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    throw std::runtime_error(std::string("MakeTestCertificate: ") + what);
  }
}

void AddExtension(X509* cert, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  Check(ext != nullptr && X509_add_ext(cert, ext, -1) == 1, "extension");
  X509_EXTENSION_free(ext);
}

template <typename Write>
std::string Pem(Write write) {
  BIO* bio = BIO_new(BIO_s_mem());
  write(bio);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}
}  // namespace

TestCertificate MakeTestCertificate(const std::string& common_name) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  Check(key != nullptr, "key");
  X509* cert = X509_new();
  Check(cert != nullptr, "certificate");
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert),
                   static_cast<long>(std::random_device{}() & 0x7fffffff));
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 86400);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  X509_set_issuer_name(cert, name);
  AddExtension(cert, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
  AddExtension(cert, NID_basic_constraints, "critical,CA:TRUE");
  Check(X509_sign(cert, key, EVP_sha256()) > 0, "sign");
  TestCertificate out;
  out.cert_pem = Pem([&](BIO* bio) { PEM_write_bio_X509(bio, cert); });
  out.key_pem = Pem(
      [&](BIO* bio) { PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr); });
  X509_free(cert);
  EVP_PKEY_free(key);
  return out;
}

std::string NginxServer::Binary() {
  for (const char* path : {"/usr/sbin/nginx", "/usr/bin/nginx"}) {
    if (access(path, X_OK) == 0) {
      return path;
    }
  }
  return "";
}

NginxServer::NginxServer(const Options& options) : tls_(options.tls) {
  const std::string nginx = Binary();
  if (nginx.empty()) {
    error_ = "no nginx binary (apt-get install nginx-light)";
    return;
  }
  const int port = FreeLoopbackPort();
  const std::string d = dir_.path();
  std::string listen = "listen 127.0.0.1:" + std::to_string(port);
  if (tls_) {
    const TestCertificate server = MakeTestCertificate("127.0.0.1");
    std::ofstream(d + "/server.pem") << server.cert_pem;
    std::ofstream(d + "/server.key") << server.key_pem;
    listen += " ssl http2;\n    ssl_certificate " + d + "/server.pem;\n    ssl_certificate_key " +
              d + "/server.key;\n    ssl_protocols " + options.tls_protocols + ";";
    if (!options.client_ca_pem.empty()) {
      std::ofstream(d + "/client-ca.pem") << options.client_ca_pem;
      listen += "\n    ssl_client_certificate " + d + "/client-ca.pem;\n    ssl_verify_client on;";
    }
  } else {
    listen += ";";
  }
  // The echo module (packaged with nginx-light) reads the body before answering.
  const std::string echo = "/usr/lib/nginx/modules/ngx_http_echo_module.so";
  const bool have_echo = access(echo.c_str(), R_OK) == 0;
  {
    std::ofstream conf(d + "/nginx.conf");
    if (have_echo) {
      conf << "load_module " << echo << ";\n";
    }
    conf << "worker_processes 1;\npid " << d << "/nginx.pid;\nerror_log " << d
         << "/error.log warn;\nevents { worker_connections 1024; }\nhttp {\n  access_log off;\n"
         << "  client_body_temp_path " << d << "/body;\n  server {\n    " << listen << "\n"
         << "    location /hooks/ { default_type text/plain; "
         << (have_echo ? "echo_read_request_body; echo -n ok;" : "return 200 ok;") << " }\n"
         << "    location /proto/ { default_type text/plain; return 200 $server_protocol; }\n"
         << "    location /early/ { default_type text/plain; return 200 early; }\n"
         << "    location /reused/ { default_type text/plain; return 200 $ssl_session_reused; }\n"
         << "    location /whoami/ { default_type text/plain; "
         << "return 200 \"$ssl_client_s_dn $connection\"; }\n"
         << "    location / { return 404; }\n  }\n}\n";
  }
  const std::string command = "echo listening 127.0.0.1:" + std::to_string(port) + "; exec " +
                              nginx + " -p " + d + " -c " + d + "/nginx.conf -e " + d +
                              "/error.log -g 'daemon off;'";
  if (process_.Start("/bin/sh", {"-c", command}) != port) {
    error_ = process_.error();
    return;
  }
  // nginx listens a moment after the shell printed the line.
  for (int i = 0; i < 500; ++i) {
    if (LoopbackAccepts(port)) {
      port_ = port;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::ifstream log(d + "/error.log");
  error_ = "nginx did not listen: " +
           std::string(std::istreambuf_iterator<char>(log), std::istreambuf_iterator<char>());
}

std::string NginxServer::Url(const std::string& path) const {
  return (tls_ ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(port_) + path;
}

}  // namespace egress
