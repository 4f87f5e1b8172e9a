#include "dispatcher/cli/http_client.h"

#include <memory>
#include <mutex>

#include <curl/curl.h>

namespace egress::cli {
namespace {

constexpr long kTimeoutSeconds = 10;
constexpr size_t kMaxAnswer = size_t{256} << 20;

struct CurlFree {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

struct Sink {
  std::string body;
  bool too_big = false;
};

size_t Append(char* data, size_t size, size_t count, void* user) {
  auto* sink = static_cast<Sink*>(user);
  const size_t n = size * count;
  if (sink->body.size() + n > kMaxAnswer) {
    sink->too_big = true;
    return 0;  // libcurl fails the transfer with CURLE_WRITE_ERROR
  }
  sink->body.append(data, n);
  return n;
}

// libcurl's global state, once per process (the CLI runs one command).
void InitCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

std::string ServerUrl::ToString() const {
  return (https ? "https://" : "http://") + address.ToString();
}

Result<ServerUrl> ParseServerUrl(std::string_view text) {
  constexpr std::string_view kHttp = "http://";
  constexpr std::string_view kHttps = "https://";
  ServerUrl url;
  if (text.starts_with(kHttps)) {
    url.https = true;
    text.remove_prefix(kHttps.size());
  } else if (text.starts_with(kHttp)) {
    text.remove_prefix(kHttp.size());
  }
  if (text.find("://") != std::string_view::npos) {
    return Status::InvalidArgument(
        "--server: only http:// and https:// are supported, e.g. https://relay.example.com");
  }
  while (!text.empty() && text.back() == '/') {
    text.remove_suffix(1);
  }
  std::string with_port(text);
  const size_t bracket = with_port.rfind(']');
  const size_t colon = with_port.rfind(':');
  if (url.https && !with_port.empty() &&
      (colon == std::string::npos || (bracket != std::string::npos && colon < bracket))) {
    with_port += ":443";
  }
  Result<HostPort> parsed = ParseHostPort(with_port);
  if (!parsed) {
    return Status::InvalidArgument("--server: " + parsed.error().message());
  }
  url.address = std::move(*parsed);
  return url;
}

Result<HttpReply> HttpCall(const ServerUrl& server, const std::string& method,
                           const std::string& target, const std::string& body,
                           const std::string& token, const std::string& cacert) {
  const std::string where = server.ToString();
  for (char c : token) {
    if (c < 0x21 || c > 0x7e) {
      // It would end or split the header; never echoed (a secret).
      return Status::InvalidArgument("the token holds a byte that is not visible ASCII");
    }
  }
  if (server.address.port == 0) {
    return Status::Unavailable(where + ": no port to connect to");
  }
  InitCurlOnce();
  std::unique_ptr<CURL, CurlFree> curl(curl_easy_init());
  if (!curl) {
    return Status::IoError(where + ": cannot start a libcurl transfer");
  }
  curl_slist* raw = nullptr;
  raw = curl_slist_append(raw, "User-Agent: relay-egress-cli");
  raw = curl_slist_append(raw, "Expect:");
  if (!body.empty()) {
    raw = curl_slist_append(raw, "Content-Type: application/json");
  }
  if (!token.empty()) {
    raw = curl_slist_append(raw, ("Authorization: Bearer " + token).c_str());
  }
  std::unique_ptr<curl_slist, CurlFree> headers(raw);
  Sink sink;
  const std::string url = where + target;
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, kTimeoutSeconds);
  // A transfer that moves nothing for 10 s fails; a long one that moves does not.
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, kTimeoutSeconds);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &Append);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
  if (!cacert.empty()) {
    curl_easy_setopt(c, CURLOPT_CAINFO, cacert.c_str());
  }
  if (method == "GET") {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
  const CURLcode rc = curl_easy_perform(c);
  if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST) {
    return Status::Unavailable(where + ": " + curl_easy_strerror(rc));
  }
  if (sink.too_big) {
    return Status::IoError(where + target + ": the answer is larger than 256 MiB");
  }
  if (rc != CURLE_OK) {
    return Status::IoError(where + target + ": " + curl_easy_strerror(rc));
  }
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  return HttpReply{.status = static_cast<int>(status), .body = std::move(sink.body)};
}

}  // namespace egress::cli
