#include "adapters/curl_transport.h"

#include <deque>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/asio/post.hpp>
#include <curl/curl.h>
#include <fmt/format.h>

#include "adapters/curl_multi.h"
#include "adapters/ip_address.h"
#include "adapters/url_parts.h"

namespace egress::adapters {
namespace {

namespace asio = boost::asio;

struct Origin;

// A URL as libcurl parsed it (a CURLU handle), handed to curl with CURLOPT_CURLU so that a
// transfer does not parse its URL again (curl_url_set plus the normalised URL it re-assembles
// with its printf: ~11k instructions per request, measured). Shared by the transfers using it.
struct ParsedUrl {
  explicit ParsedUrl(CURLU* h) : handle(h) {}
  ~ParsedUrl() { curl_url_cleanup(handle); }
  ParsedUrl(const ParsedUrl&) = delete;
  ParsedUrl& operator=(const ParsedUrl&) = delete;
  CURLU* handle;
};

// One pooled easy handle and everything curl points into while it runs a request. Options that
// never change are set once when it is made; Send sets the per-request ones over the previous
// request's, so a handle is never reset (curl_easy_reset would restore ~100 defaults, and the
// constant options would then be set again).
struct Transfer {
  CURL* easy = nullptr;
  bool live = false;
  // The request headers as a curl_slist whose nodes and strings live in these two buffers,
  // reused from request to request (curl only reads the list).
  std::vector<curl_slist> header_nodes;
  std::string header_text;
  // The parsed form of request.url, while curl may read it; null when curl parses the text.
  std::shared_ptr<const ParsedUrl> url;
  HttpRequest request;
  HttpResponse response;
  HttpCallback done;
  size_t body_cap = 0;
  SteadyTime started;
  Status refused;  // set when the SSRF guard refused the address
  CurlMulti* multi = nullptr;
  Origin* origin = nullptr;  // with a per-host limit
  std::string origin_key;
  bool queued = false;  // waiting in origin->waiting, not yet given to curl
  // The trust (CURLOPT_CAINFO, CURLOPT_CAPATH; "" for none) the handle holds: set again only
  // when a request needs another (libcurl copies the strings on every set).
  std::string ca_file_set;
  std::string ca_path_set;
};

// The transfers to one scheme://authority. Over HTTP/1.1 each needs a connection of its own,
// and curl parks those over max_host_connections in a pending list: every time a transfer ends
// it wakes one, which sets up its connection again (URL parse, cache search: ~25k instructions,
// measured) and, when a new transfer took the free connection first, parks again. Admitting at
// most max_host_connections per origin here, in arrival order, keeps that churn out of curl.
// An origin seen answering over HTTP/2 multiplexes: it is admitted as many transfers as its
// connections carry streams (max_host_connections x max_concurrent_streams), so curl's pending
// list stays empty there too.
struct Origin {
  size_t active = 0;  // given to curl
  std::deque<Transfer*> waiting;
  bool multiplexed = false;
};

// Room reserved for response headers, enough for most answers without regrowing.
constexpr size_t kExpectedResponseHeaders = 8;

long CurlHttpVersion(HttpVersion v) {
  switch (v) {
    case HttpVersion::kHttp11:
      return CURL_HTTP_VERSION_1_1;
    case HttpVersion::kHttp2:
      return CURL_HTTP_VERSION_2_0;
    case HttpVersion::kAuto:
      break;
  }
  return CURL_HTTP_VERSION_2TLS;
}

// The TLS session cache shared by every transfer (CURL_LOCK_DATA_SSL_SESSION). libcurl 7.88
// keeps the cache in each easy handle otherwise, so a pooled handle that happens to run a
// request on a new connection could not resume a session another handle made. One loop thread
// uses it: no lock callbacks. Null when curl_share_init failed (then nothing is shared).
struct SessionShare {
  SessionShare() : handle(curl_share_init()) {
    if (handle != nullptr) {
      curl_share_setopt(handle, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    }
  }
  ~SessionShare() {
    if (handle != nullptr) {
      curl_share_cleanup(handle);
    }
  }
  SessionShare(const SessionShare&) = delete;
  SessionShare& operator=(const SessionShare&) = delete;
  CURLSH* handle;
};

// Whether curl's default trust includes a CA bundle file. Debian's libcurl is built with both a
// bundle and a CA directory; with a directory set, libcurl 7.88 parses the CA store again for
// every new TLS connection (its per-multi CA cache is skipped when CURLOPT_CAPATH is set, see
// Curl_ssl_setup_x509_store), which costs ~20 ms of the loop per connection with the system's
// ~140 certificates. The directory is dropped when a bundle file is there to trust instead.
bool HasDefaultCaFile() {
  const curl_version_info_data* v = curl_version_info(CURLVERSION_NOW);
  return v != nullptr && v->age >= CURLVERSION_SEVENTH && v->cainfo != nullptr &&
         v->cainfo[0] != '\0';
}

// libcurl's built-in CA bundle file or directory ("" when it has none), which a handle gets back
// after a request with a trust of its own.
std::string DefaultCaFile() {
  const curl_version_info_data* v = curl_version_info(CURLVERSION_NOW);
  return v != nullptr && v->age >= CURLVERSION_SEVENTH && v->cainfo != nullptr ? v->cainfo : "";
}
std::string DefaultCaPath() {
  const curl_version_info_data* v = curl_version_info(CURLVERSION_NOW);
  return v != nullptr && v->age >= CURLVERSION_SEVENTH && v->capath != nullptr ? v->capath : "";
}

// Sets the handle's trust to `ca_file` and `ca_path` ("" for none) unless it holds them already.
void SetTrust(Transfer& t, const std::string& ca_file, const std::string& ca_path) {
  if (t.ca_file_set != ca_file) {
    curl_easy_setopt(t.easy, CURLOPT_CAINFO, ca_file.empty() ? nullptr : ca_file.c_str());
    t.ca_file_set = ca_file;
  }
  if (t.ca_path_set != ca_path) {
    curl_easy_setopt(t.easy, CURLOPT_CAPATH, ca_path.empty() ? nullptr : ca_path.c_str());
    t.ca_path_set = ca_path;
  }
}

// A failed transfer that still holds a whole response: libcurl 7.88 fails an HTTP/2 POST whose
// server answered in full and then reset the stream before reading the body (nginx's `return
// 200` does this; RFC 9113 section 8.1 allows it, and the client must not discard the answer)
// with CURLE_HTTP2_STREAM or a send error. The status and every byte of a Content-Length body
// arrived, so it is the server's answer: retrying it would deliver twice.
bool CompleteDespite(CURL* easy, int code, const HttpResponse& response) {
  if (code != CURLE_HTTP2_STREAM && code != CURLE_HTTP2 && code != CURLE_SEND_ERROR) {
    return false;
  }
  long status = 0;
  curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
  curl_off_t length = -1;
  curl_easy_getinfo(easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
  curl_off_t received = -1;
  curl_easy_getinfo(easy, CURLINFO_SIZE_DOWNLOAD_T, &received);
  return status >= 200 && length >= 0 && received == length &&
         (response.body_truncated || response.body.size() == static_cast<size_t>(length));
}

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
  const curl_socket_t fd = socket(addr->family, addr->socktype, addr->protocol);
  if (fd != CURL_SOCKET_BAD) {
    t->multi->Adopt(fd);
  }
  return fd;
}

// Before each request is sent, on a new connection or a reused one: a connection in the pool may
// have been opened for another tenant whose policy allowed its address, so the open-socket check
// alone does not cover a reused connection. Same check, on the address libcurl is connected to.
int OnPrereq(void* user, char* primary_ip, char* /*local_ip*/, int primary_port,
             int /*local_port*/) {
  auto* t = static_cast<Transfer*>(user);
  if (!t->request.ssrf) {
    return CURL_PREREQFUNC_OK;
  }
  Result<IpAddress> address = IpAddress::Parse(primary_ip == nullptr ? "" : primary_ip);
  Status s = !address.has_value() ? address.error()
                                  : CheckDestination(*address, static_cast<uint16_t>(primary_port),
                                                     *t->request.ssrf);
  if (!s.ok()) {
    t->refused = std::move(s);
    return CURL_PREREQFUNC_ABORT;
  }
  return CURL_PREREQFUNC_OK;
}

Status FromCurl(CURLcode code, const Transfer& t) {
  if (!t.refused.ok()) {
    return t.refused;
  }
  std::string msg =
      fmt::format("{} {}: {}", t.request.method, ShownUrl(t.request), curl_easy_strerror(code));
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

// libcurl asks for "100-continue" only for bodies above this (EXPECT_100_THRESHOLD: 1 MiB since
// 7.58, 1 KiB before); a smaller body needs no "Expect:" header to keep it from doing so.
constexpr size_t kExpectThreshold = 1024;

// Points t.header_nodes / t.header_text at `headers`, then "User-Agent: <user_agent>" unless
// `headers` has one or `user_agent` is empty, then, for a body over kExpectThreshold, "Expect:"
// (no 100-continue round trip). No allocation once the buffers have grown to the largest
// request seen. (The User-Agent rides in the list rather than CURLOPT_USERAGENT, which libcurl
// formats into a header of its own with its printf on every request: ~1.5k instructions more,
// measured. Every entry costs a little in each of libcurl's ~8 header lookups per request.)
curl_slist* BuildHeaderList(Transfer& t, const HttpHeaders& headers, std::string_view user_agent,
                            size_t body_size) {
  constexpr std::string_view kNoExpect = "Expect:";
  constexpr std::string_view kUserAgent = "User-Agent";
  bool add_user_agent = !user_agent.empty();
  const bool add_no_expect = body_size > kExpectThreshold;
  size_t bytes = kNoExpect.size() + 1 + kUserAgent.size() + 2 + user_agent.size() + 1;
  for (const HttpHeader& h : headers) {
    bytes += h.name.size() + 2 + h.value.size() + 1;
    add_user_agent = add_user_agent && !EqualsIgnoreCase(h.name, kUserAgent);
  }
  std::string& text = t.header_text;
  text.clear();
  text.reserve(bytes);  // no reallocation below: the nodes point into `text`
  std::vector<curl_slist>& nodes = t.header_nodes;
  nodes.resize(headers.size() + (add_user_agent ? 1 : 0) + (add_no_expect ? 1 : 0));
  if (nodes.empty()) {
    return nullptr;
  }
  size_t i = 0;
  auto add = [&](std::string_view name, std::string_view value, bool with_value) {
    const size_t at = text.size();
    text.append(name);
    if (with_value) {
      text.append(": ");
      text.append(value);
    }
    text.push_back('\0');
    nodes[i].data = text.data() + at;
    nodes[i].next = i + 1 < nodes.size() ? &nodes[i + 1] : nullptr;
    ++i;
  };
  for (const HttpHeader& h : headers) {
    add(h.name, h.value, true);
  }
  if (add_user_agent) {
    add(kUserAgent, user_agent, true);
  }
  if (add_no_expect) {
    add(kNoExpect, {}, false);
  }
  return nodes.data();
}

class CurlTransport final : public HttpTransport {
 public:
  CurlTransport(asio::io_context& io, const Clock& clock, const TransportOptions& options)
      : io_(io),
        clock_(clock),
        options_(options),
        multi_(io, clock,
               {options.max_host_connections, options.max_total_connections,
                options.max_concurrent_streams},
               [this](void* easy, int code) { Finish(static_cast<CURL*>(easy), code); }) {}

  ~CurlTransport() override {
    for (auto& t : transfers_) {
      if (t->live && !t->queued) {
        multi_.Remove(t->easy);
      }
      curl_easy_cleanup(t->easy);
    }
  }

  void Send(HttpRequest request, HttpCallback done) override;
  size_t InFlight() const override { return in_flight_; }
  void CancelAll() override;
  uint64_t ConnectionsOpened() const override { return multi_.sockets_opened(); }

 private:
  Transfer* Acquire();
  std::shared_ptr<const ParsedUrl> Parse(const std::string& url);
  void Configure(Transfer& t);
  void Start(Transfer& t);
  void Admit(Origin& origin);
  void Leave(Transfer& t);
  void Fail(Transfer& t, Status status);
  void Finish(CURL* easy, int code);
  void Release(Transfer& t);
  size_t Capacity(const Origin& origin) const;

  asio::io_context& io_;
  const Clock& clock_;
  const TransportOptions options_;
  const bool drop_ca_path_ =
      options_.ca_path.empty() && (!options_.ca_file.empty() || HasDefaultCaFile());
  // The transport's trust, for requests without their own: ca_file or libcurl's bundle, and
  // ca_path or (unless dropped, see HasDefaultCaFile) libcurl's directory.
  const std::string ca_file_ = options_.ca_file.empty() ? DefaultCaFile() : options_.ca_file;
  const std::string ca_path_ = !options_.ca_path.empty() ? options_.ca_path
                               : drop_ca_path_           ? ""
                                                         : DefaultCaPath();
  SessionShare share_;  // outlives multi_ (declared first): its connections may hold sessions
  CurlMulti multi_;
  std::vector<std::unique_ptr<Transfer>> transfers_;  // every easy handle made
  std::vector<Transfer*> idle_;                       // those not running a request
  size_t in_flight_ = 0;
  std::unordered_map<std::string, Origin> origins_;  // those with transfers, when limited
  // URLs parsed so far; dropped all at once at kMaxParsedUrls (transfers keep theirs alive).
  std::unordered_map<std::string, std::shared_ptr<const ParsedUrl>> parsed_urls_;
  static constexpr size_t kMaxParsedUrls = 1024;
};

// A pooled transfer, or a new one with the options every request shares.
Transfer* CurlTransport::Acquire() {
  if (!idle_.empty()) {
    Transfer* t = idle_.back();
    idle_.pop_back();
    return t;
  }
  auto owned = std::make_unique<Transfer>();
  Transfer* t = owned.get();
  t->easy = curl_easy_init();
  if (t->easy == nullptr) {
    return nullptr;
  }
  t->multi = &multi_;
  transfers_.push_back(std::move(owned));
  CURL* e = t->easy;
  multi_.ConfigureEasy(e);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_PRIVATE, t);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
  // No proxy, whatever http_proxy / https_proxy / no_proxy say: a proxy would resolve and
  // connect for us, out of the SSRF guard's sight (it checks the address we connect to).
  curl_easy_setopt(e, CURLOPT_PROXY, "");
  curl_easy_setopt(e, CURLOPT_NOPROXY, "*");  // also spares a getenv("no_proxy") per request
  curl_easy_setopt(e, CURLOPT_HTTP_VERSION, CurlHttpVersion(options_.http_version));
  curl_easy_setopt(e, CURLOPT_SSLVERSION,
                   options_.min_tls_version == TlsVersion::kTls13
                       ? static_cast<long>(CURL_SSLVERSION_TLSv1_3)
                       : static_cast<long>(CURL_SSLVERSION_TLSv1_2));
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
  // A new handle holds libcurl's built-in trust; SetTrust replaces what differs.
  t->ca_file_set = DefaultCaFile();
  t->ca_path_set = DefaultCaPath();
  SetTrust(*t, ca_file_, ca_path_);  // drops the directory (HasDefaultCaFile) unless configured
  if (share_.handle != nullptr) {
    curl_easy_setopt(e, CURLOPT_SHARE, share_.handle);
  }
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &OnBody);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &OnHeader);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
  curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, &OnOpenSocket);
  curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, t);
  curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, &OnPrereq);
  curl_easy_setopt(e, CURLOPT_PREREQDATA, t);
  return t;
}

// `url` parsed by libcurl the way a transfer would parse it (url.c, parseurlandfillconn: guess a
// missing scheme, accept any scheme here and refuse it later), from the cache or now; null when
// curl refuses it, so that the transfer parses the text itself and fails with curl's own error.
std::shared_ptr<const ParsedUrl> CurlTransport::Parse(const std::string& url) {
  if (auto it = parsed_urls_.find(url); it != parsed_urls_.end()) {
    return it->second;
  }
  CURLU* h = curl_url();
  if (h == nullptr) {
    return nullptr;
  }
  auto parsed = std::make_shared<const ParsedUrl>(h);
  if (curl_url_set(h, CURLUPART_URL, url.c_str(), CURLU_GUESS_SCHEME | CURLU_NON_SUPPORT_SCHEME) !=
      CURLUE_OK) {
    return nullptr;
  }
  if (parsed_urls_.size() >= kMaxParsedUrls) {
    parsed_urls_.clear();
  }
  parsed_urls_.emplace(url, parsed);
  return parsed;
}

// The per-request options, each set on every request so none carries over from the last.
void CurlTransport::Configure(Transfer& t) {
  CURL* e = t.easy;
  const HttpRequest& r = t.request;
  // Both: curl takes the parts from the CURLU handle, and keeps the text as the transfer's URL
  // (7.88 would otherwise keep the previous request's text for a reused handle).
  curl_easy_setopt(e, CURLOPT_URL, r.url.c_str());
  t.url = Parse(r.url);
  curl_easy_setopt(e, CURLOPT_CURLU, t.url != nullptr ? t.url->handle : nullptr);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(r.timeout.count()));
  // An https:// transfer to an origin whose connection is still being set up waits to learn
  // whether it multiplexes rather than opening a connection of its own (HTTP/2: one connection
  // carries max_concurrent_streams transfers). Never for http://: libcurl 7.88 would park it
  // behind a busy HTTP/1.1 connection, and does not enforce the timeout of parked transfers
  // (curl#13227, fixed in 8.8.0).
  const bool pipewait =
      options_.http_version != HttpVersion::kHttp11 && r.url.starts_with("https://");
  curl_easy_setopt(e, CURLOPT_PIPEWAIT, pipewait ? 1L : 0L);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(r.connect_timeout.count()));
  const bool with_body = !r.body.empty() || r.method == "POST" || r.method == "PUT";
  if (with_body) {
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, r.body.data());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
  } else {
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);  // forgets a previous request's body
  }
  // POST with a body and GET without one are curl's own methods; others are named.
  const bool curl_method = with_body ? r.method == "POST" : r.method == "GET";
  curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, curl_method ? nullptr : r.method.c_str());
  curl_easy_setopt(e, CURLOPT_HTTPHEADER,
                   BuildHeaderList(t, r.headers, options_.user_agent, r.body.size()));
  // A request's own trust replaces the transport's whole: its ca_path alone trusts no bundle.
  const bool own_trust = !r.ca_file.empty() || !r.ca_path.empty();
  SetTrust(t, own_trust ? r.ca_file : ca_file_, own_trust ? r.ca_path : ca_path_);
  const bool client_cert = !r.client_cert_file.empty() && !r.client_key_file.empty();
  curl_easy_setopt(e, CURLOPT_SSLCERT, client_cert ? r.client_cert_file.c_str() : nullptr);
  curl_easy_setopt(e, CURLOPT_SSLKEY, client_cert ? r.client_key_file.c_str() : nullptr);
}

void CurlTransport::Send(HttpRequest request, HttpCallback done) {
  Transfer* t = Acquire();
  if (t == nullptr) {
    asio::post(io_,
               [done = std::move(done)] { done(Status::Unavailable("curl_easy_init failed")); });
    return;
  }
  t->request = std::move(request);
  t->response = HttpResponse{};
  t->response.headers.reserve(kExpectedResponseHeaders);
  t->refused = Status::Ok();
  t->done = std::move(done);
  t->body_cap = options_.max_response_body;
  t->started = clock_.Now();
  Configure(*t);
  t->live = true;
  ++in_flight_;
  const long limit = options_.max_host_connections;
  if (limit > 0) {
    t->origin_key.assign(UrlOrigin(t->request.url));
    Origin& origin = origins_[t->origin_key];
    t->origin = &origin;
    if (origin.active >= Capacity(origin)) {
      t->queued = true;
      origin.waiting.push_back(t);
      return;
    }
    ++origin.active;
  }
  Start(*t);
}

// Gives `t` to curl; on failure completes it with the error (its origin slot is freed, and
// whoever admits next uses it).
void CurlTransport::Start(Transfer& t) {
  t.queued = false;
  if (Status s = multi_.Add(t.easy); !s.ok()) {
    if (t.origin != nullptr) {
      --t.origin->active;
    }
    Fail(t, std::move(s));
  }
}

// Starts waiting transfers while the origin has room. A transfer's timeout counts from Send, as
// it would have in curl's pending list: what is left of it goes to curl.
void CurlTransport::Admit(Origin& origin) {
  while (!origin.waiting.empty() && origin.active < Capacity(origin)) {
    Transfer* t = origin.waiting.front();
    origin.waiting.pop_front();
    const auto waited = std::chrono::duration_cast<Millis>(clock_.Now() - t->started);
    const Millis left = t->request.timeout - waited;
    if (left <= Millis(0)) {
      t->queued = false;
      Fail(*t,
           Status::TimedOut(fmt::format("{} {}: timed out after {} ms waiting for a connection",
                                        t->request.method, ShownUrl(t->request), waited.count())));
      continue;
    }
    curl_easy_setopt(t->easy, CURLOPT_TIMEOUT_MS, static_cast<long>(left.count()));
    ++origin.active;
    Start(*t);
  }
}

// Transfers `origin` may have in curl at once: a connection each, or over HTTP/2 the streams of
// every connection.
size_t CurlTransport::Capacity(const Origin& origin) const {
  const auto connections = static_cast<size_t>(options_.max_host_connections);
  return origin.multiplexed ? connections * static_cast<size_t>(options_.max_concurrent_streams)
                            : connections;
}

// `t` (given to curl) is done with its origin: the next waiting transfer may start.
void CurlTransport::Leave(Transfer& t) {
  Origin* origin = t.origin;
  if (origin == nullptr) {
    return;
  }
  t.origin = nullptr;
  --origin->active;
  Admit(*origin);
  if (origin->active == 0 && origin->waiting.empty()) {
    origins_.erase(t.origin_key);
  }
}

// Completes `t`, which curl does not hold, with `status` (posted).
void CurlTransport::Fail(Transfer& t, Status status) {
  t.live = false;
  --in_flight_;
  t.origin = nullptr;
  HttpCallback cb = std::move(t.done);
  Release(t);
  asio::post(io_, [cb = std::move(cb), status = std::move(status)] { cb(status); });
}

void CurlTransport::Finish(CURL* easy, int code) {
  void* user = nullptr;
  curl_easy_getinfo(easy, CURLINFO_PRIVATE, &user);
  auto* t = static_cast<Transfer*>(user);
  if (t == nullptr || !t->live) {
    return;
  }
  t->live = false;
  --in_flight_;
  t->response.elapsed = std::chrono::duration_cast<Millis>(clock_.Now() - t->started);
  if (code != CURLE_OK && t->refused.ok() && CompleteDespite(easy, code, t->response)) {
    code = CURLE_OK;
  }
  if (code == CURLE_OK) {
    long status = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    char* ip = nullptr;
    curl_easy_getinfo(easy, CURLINFO_PRIMARY_IP, &ip);
    t->response.status = static_cast<int>(status);
    t->response.remote_ip = ip != nullptr ? ip : "";
    long version = 0;
    curl_easy_getinfo(easy, CURLINFO_HTTP_VERSION, &version);
    t->response.http2 = version >= CURL_HTTP_VERSION_2_0;
    if (t->origin != nullptr && t->response.http2) {
      t->origin->multiplexed = true;
    }
  }
  Result<HttpResponse> result =
      code == CURLE_OK ? Result<HttpResponse>(std::move(t->response))
                       : Result<HttpResponse>(FromCurl(static_cast<CURLcode>(code), *t));
  Leave(*t);
  HttpCallback done = std::move(t->done);
  Release(*t);
  done(std::move(result));
}

void CurlTransport::CancelAll() {
  for (auto& t : transfers_) {
    if (!t->live) {
      continue;
    }
    if (!t->queued) {
      multi_.Remove(t->easy);
    }
    t->queued = false;
    t->origin = nullptr;
    t->live = false;
    --in_flight_;
    HttpCallback cb = std::move(t->done);
    Status s = Status::Cancelled(
        fmt::format("{} {}: transport shut down", t->request.method, ShownUrl(t->request)));
    Release(*t);
    asio::post(io_, [cb = std::move(cb), s = std::move(s)] { cb(s); });
  }
  origins_.clear();  // nothing active or waiting any more
}

void CurlTransport::Release(Transfer& t) {
  t.request = HttpRequest{};  // an idle handle keeps no payload alive
  // The parsed URL may leave the cache while the handle idles: curl keeps no pointer to it.
  curl_easy_setopt(t.easy, CURLOPT_CURLU, nullptr);
  t.url = nullptr;
  t.done = nullptr;
  idle_.push_back(&t);
}

}  // namespace

std::unique_ptr<HttpTransport> NewCurlTransport(asio::io_context& io, const Clock& clock,
                                                const TransportOptions& options) {
  return std::make_unique<CurlTransport>(io, clock, options);
}

}  // namespace egress::adapters
