#include "adapters/curl_transport.h"

#include <unordered_map>
#include <vector>

#include <boost/asio/post.hpp>
#include <curl/curl.h>
#include <fmt/format.h>

#include "adapters/curl_multi.h"

namespace egress::adapters {
namespace {

namespace asio = boost::asio;

// One request on the wire: the easy handle and everything curl points into.
struct Transfer {
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  HttpRequest request;
  HttpResponse response;
  HttpCallback done;
  size_t body_cap = 0;
  SteadyTime started;
  Status refused;  // set when the SSRF guard refused the address
};

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t len = size * n;
  const size_t room = t->body_cap - std::min(t->body_cap, t->response.body.size());
  t->response.body.append(data, std::min(room, len));
  t->response.body_truncated = t->response.body_truncated || len > room;
  return len;  // keep reading (and discarding) so the connection stays reusable
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t len = size * n;
  std::string_view line(data, len);
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) {
    line.remove_suffix(1);
  }
  if (line.starts_with("HTTP/")) {
    t->response.headers.clear();  // a new response (after 100 Continue)
    return len;
  }
  const size_t colon = line.find(':');
  if (colon != std::string_view::npos && colon > 0) {
    t->response.headers.push_back({std::string(TrimOws(line.substr(0, colon))),
                                   std::string(TrimOws(line.substr(colon + 1)))});
  }
  return len;
}

curl_socket_t OnOpenSocket(void* user, curlsocktype purpose, curl_sockaddr* addr) {
  auto* t = static_cast<Transfer*>(user);
  if (purpose == CURLSOCKTYPE_IPCXN && t->request.ssrf) {
    Status s = CheckDestination(&addr->addr, addr->addrlen, *t->request.ssrf);
    if (!s.ok()) {
      t->refused = std::move(s);
      return CURL_SOCKET_BAD;
    }
  }
  return socket(addr->family, addr->socktype, addr->protocol);
}

Status FromCurl(CURLcode code, const Transfer& t) {
  if (!t.refused.ok()) {
    return t.refused;
  }
  std::string msg =
      fmt::format("{} {}: {}", t.request.method, t.request.url, curl_easy_strerror(code));
  switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
      return Status::TimedOut(std::move(msg));
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return Status::InvalidArgument(std::move(msg));
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
      return Status::Rejected(std::move(msg));
    case CURLE_ABORTED_BY_CALLBACK:
      return Status::Cancelled(std::move(msg));
    default:
      return Status::Unavailable(std::move(msg));
  }
}

class CurlTransport final : public HttpTransport {
 public:
  CurlTransport(asio::io_context& io, const Clock& clock, const TransportOptions& options)
      : io_(io),
        clock_(clock),
        options_(options),
        multi_(io, {options.max_host_connections, options.max_total_connections}),
        alive_(std::make_shared<bool>(true)) {}

  ~CurlTransport() override {
    *alive_ = false;
    for (auto& [easy, t] : live_) {
      multi_.Remove(easy);
      Release(*t);
    }
    for (CURL* easy : idle_) {
      curl_easy_cleanup(easy);
    }
  }

  void Send(HttpRequest request, HttpCallback done) override;
  size_t InFlight() const override { return live_.size(); }
  void CancelAll() override;

 private:
  void Configure(Transfer& t);
  void Finish(CURL* easy, int code);
  void Release(Transfer& t);

  asio::io_context& io_;
  const Clock& clock_;
  const TransportOptions options_;
  CurlMulti multi_;
  std::shared_ptr<bool> alive_;
  std::unordered_map<CURL*, std::unique_ptr<Transfer>> live_;
  std::vector<CURL*> idle_;  // reset easy handles kept for reuse
};

void CurlTransport::Configure(Transfer& t) {
  CURL* e = t.easy;
  const HttpRequest& r = t.request;
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_PRIVATE, &t);
  curl_easy_setopt(e, CURLOPT_URL, r.url.c_str());
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(e, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(r.timeout.count()));
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(r.connect_timeout.count()));
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
  if (!options_.ca_file.empty()) {
    curl_easy_setopt(e, CURLOPT_CAINFO, options_.ca_file.c_str());
  }
  if (!options_.ca_path.empty()) {
    curl_easy_setopt(e, CURLOPT_CAPATH, options_.ca_path.c_str());
  }
  curl_easy_setopt(e, CURLOPT_USERAGENT, options_.user_agent.c_str());
  curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r.method.c_str());
  if (!r.body.empty() || r.method == "POST" || r.method == "PUT") {
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, r.body.data());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
  }
  for (const HttpHeader& h : r.headers) {
    t.headers = curl_slist_append(t.headers, (h.name + ": " + h.value).c_str());
  }
  t.headers = curl_slist_append(t.headers, "Expect:");  // no 100-continue round trip
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, t.headers);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &OnBody);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &OnHeader);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, &OnOpenSocket);
  curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, &t);
}

void CurlTransport::Send(HttpRequest request, HttpCallback done) {
  auto t = std::make_unique<Transfer>();
  if (!idle_.empty()) {
    t->easy = idle_.back();
    idle_.pop_back();
  } else {
    t->easy = curl_easy_init();
  }
  t->request = std::move(request);
  t->done = std::move(done);
  t->body_cap = options_.max_response_body;
  t->started = clock_.Now();
  Configure(*t);
  CURL* easy = t->easy;
  Status s = multi_.Add(easy, [this, alive = alive_, easy](int code) {
    if (*alive) {
      Finish(easy, code);
    }
  });
  if (!s.ok()) {
    HttpCallback cb = std::move(t->done);
    Release(*t);
    asio::post(io_, [cb = std::move(cb), s] { cb(s); });
    return;
  }
  live_.emplace(easy, std::move(t));
}

void CurlTransport::Finish(CURL* easy, int code) {
  auto it = live_.find(easy);
  if (it == live_.end()) {
    return;
  }
  std::unique_ptr<Transfer> t = std::move(it->second);
  live_.erase(it);
  t->response.elapsed = std::chrono::duration_cast<Millis>(clock_.Now() - t->started);
  Result<HttpResponse> result = Status::Unavailable("unset");
  if (code == CURLE_OK) {
    long status = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    char* ip = nullptr;
    curl_easy_getinfo(easy, CURLINFO_PRIMARY_IP, &ip);
    t->response.status = static_cast<int>(status);
    t->response.remote_ip = ip != nullptr ? ip : "";
    result = std::move(t->response);
  } else {
    result = FromCurl(static_cast<CURLcode>(code), *t);
  }
  HttpCallback done = std::move(t->done);
  Release(*t);
  done(std::move(result));
}

void CurlTransport::CancelAll() {
  auto live = std::move(live_);
  live_.clear();
  for (auto& [easy, t] : live) {
    multi_.Remove(easy);
    HttpCallback cb = std::move(t->done);
    Status s = Status::Cancelled(
        fmt::format("{} {}: transport shut down", t->request.method, t->request.url));
    Release(*t);
    asio::post(io_, [cb = std::move(cb), s = std::move(s)] { cb(s); });
  }
}

void CurlTransport::Release(Transfer& t) {
  curl_slist_free_all(t.headers);
  t.headers = nullptr;
  curl_easy_reset(t.easy);
  idle_.push_back(t.easy);
  t.easy = nullptr;
}

}  // namespace

std::unique_ptr<HttpTransport> NewCurlTransport(asio::io_context& io, const Clock& clock,
                                                const TransportOptions& options) {
  return std::make_unique<CurlTransport>(io, clock, options);
}

}  // namespace egress::adapters
