#include "tests/simulator/h2_session.h"

#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>
#include <nghttp2/nghttp2.h>

#include "adapters/http_header.h"

namespace egress::sim {

namespace asio = boost::asio;
namespace beast = boost::beast;

namespace {

// Bytes of one read from the TLS stream, and most output bytes gathered for one write.
constexpr size_t kReadChunk = 16 * 1024;
constexpr size_t kWriteChunk = 64 * 1024;
// Fields one request may carry (pseudo-headers included).
constexpr size_t kMaxFields = 256;

nghttp2_nv Nv(std::string_view name, std::string_view value) {
  return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                    reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(),
                    value.size(), NGHTTP2_NV_FLAG_NONE};
}

bool IsConnectionSpecific(std::string_view name) {
  // RFC 9113 section 8.2.2: not allowed in HTTP/2.
  return name == "connection" || name == "keep-alive" || name == "proxy-connection" ||
         name == "transfer-encoding" || name == "upgrade" || name == "content-length" ||
         name == "content-type";  // the last two: sent once, from the response itself
}

}  // namespace

class H2Session : public std::enable_shared_from_this<H2Session> {
 public:
  H2Session(TlsStream&& stream, const RequestHandler& handler, const H2Limits& limits)
      : stream_(std::move(stream)),
        idle_timer_(stream_.get_executor()),
        handler_(handler),
        limits_(limits) {}

  ~H2Session() { nghttp2_session_del(session_); }

  void Start() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->Begin(); });
  }

 private:
  struct Stream {
    SimRequest request;
    size_t header_bytes = 0;
    size_t fields = 0;
    bool refused = false;  // reset by us; whatever else arrives for it is ignored
    SimResponse response;
    size_t sent = 0;  // response body bytes handed to nghttp2
    std::unique_ptr<Timer> delay;
  };

  void Begin() {
    nghttp2_session_callbacks* cbs = nullptr;
    if (nghttp2_session_callbacks_new(&cbs) != 0) {
      Close();
      return;
    }
    nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, &H2Session::OnBeginHeaders);
    nghttp2_session_callbacks_set_on_header_callback(cbs, &H2Session::OnHeader);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, &H2Session::OnData);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, &H2Session::OnFrame);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, &H2Session::OnStreamClose);
    const int rv = nghttp2_session_server_new(&session_, cbs, this);
    nghttp2_session_callbacks_del(cbs);
    if (rv != 0) {
      Close();
      return;
    }
    const std::array<nghttp2_settings_entry, 2> settings = {{
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, limits_.max_concurrent_streams},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, static_cast<uint32_t>(kH2HeaderBytes)},
    }};
    if (nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings.data(), settings.size()) !=
        0) {
      Close();
      return;
    }
    ArmIdleTimer();
    Flush();
    Read();
  }

  void Read() {
    stream_.async_read_some(
        asio::buffer(in_),
        [self = shared_from_this()](beast::error_code ec, size_t n) { self->OnRead(ec, n); });
  }

  void OnRead(beast::error_code ec, size_t n) {
    if (ec || closed_) {
      Close();
      return;
    }
    active_ = true;
    const ssize_t used = nghttp2_session_mem_recv(session_, in_.data(), n);
    if (used < 0) {
      Close();  // a protocol error nghttp2 could not answer with GOAWAY
      return;
    }
    Flush();
    if (!closed_) {
      Read();
    }
  }

  // Writes what nghttp2 has to send, one write at a time; ends the connection when nghttp2
  // wants neither to read nor to write (after GOAWAY).
  void Flush() {
    if (writing_ || closed_) {
      return;
    }
    out_.clear();
    while (out_.size() < kWriteChunk) {
      const uint8_t* data = nullptr;
      const ssize_t n = nghttp2_session_mem_send(session_, &data);
      if (n < 0) {
        Close();
        return;
      }
      if (n == 0) {
        break;
      }
      out_.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
    }
    if (out_.empty()) {
      if (nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0) {
        Close();
      }
      return;
    }
    writing_ = true;
    asio::async_write(stream_, asio::buffer(out_),
                      [self = shared_from_this()](beast::error_code ec, size_t) {
                        self->writing_ = false;
                        if (ec) {
                          self->Close();
                          return;
                        }
                        self->Flush();
                      });
  }

  void Close() {
    if (closed_) {
      return;
    }
    closed_ = true;
    beast::error_code ignored;
    LowestLayer(stream_).close(ignored);
    idle_timer_.cancel();
    for (auto& [id, s] : streams_) {
      if (s->delay) {
        s->delay->cancel();
      }
    }
  }

  void ArmIdleTimer() {
    idle_timer_.expires_after(kIdleTimeout);
    idle_timer_.async_wait([weak = weak_from_this()](beast::error_code ec) {
      std::shared_ptr<H2Session> self = weak.lock();
      if (ec || !self || self->closed_) {
        return;
      }
      if (!self->active_) {
        self->Close();
        return;
      }
      self->active_ = false;
      self->ArmIdleTimer();
    });
  }

  Stream* Find(int32_t id) {
    auto it = streams_.find(id);
    return it == streams_.end() ? nullptr : it->second.get();
  }

  void Refuse(int32_t id, Stream& s, uint32_t error_code) {
    s.refused = true;
    body_bytes_ -= s.request.body.size();
    std::string().swap(s.request.body);
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, error_code);
  }

  // A complete request: answer now, or after its delay.
  void Dispatch(int32_t id, Stream& s) {
    s.response = handler_(s.request);
    body_bytes_ -= s.request.body.size();
    std::string().swap(s.request.body);
    if (s.response.delay_ms <= 0) {
      Respond(id, s);
      return;
    }
    s.delay = std::make_unique<Timer>(stream_.get_executor());
    s.delay->expires_after(std::chrono::milliseconds(s.response.delay_ms));
    s.delay->async_wait([self = shared_from_this(), id](beast::error_code ec) {
      Stream* found = self->Find(id);
      if (ec || self->closed_ || found == nullptr) {
        return;
      }
      self->Respond(id, *found);
      self->Flush();
    });
  }

  void Respond(int32_t id, Stream& s) {
    const SimResponse& r = s.response;
    if (r.reset_connection) {
      nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_INTERNAL_ERROR);
      return;
    }
    const std::string status = std::to_string(std::clamp(r.status, 100, 999));
    const std::string length = std::to_string(r.body.size());
    std::vector<std::string> names;
    names.reserve(r.headers.size());
    std::vector<nghttp2_nv> nva;
    nva.reserve(r.headers.size() + 3);
    nva.push_back(Nv(":status", status));
    for (const auto& [name, value] : r.headers) {
      names.push_back(adapters::ToLowerAscii(name));
      if (!IsConnectionSpecific(names.back())) {
        nva.push_back(Nv(names.back(), value));
      }
    }
    if (!r.body.empty() || r.status != 204) {
      nva.push_back(Nv("content-type", r.content_type));
    }
    nva.push_back(Nv("content-length", length));
    nghttp2_data_provider body{};
    body.read_callback = &H2Session::ReadBody;
    // nghttp2 copies the names and values (no NO_COPY flag).
    nghttp2_submit_response(session_, id, nva.data(), nva.size(), r.body.empty() ? nullptr : &body);
  }

  static H2Session& Self(void* user_data) { return *static_cast<H2Session*>(user_data); }

  static int OnBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) {
      return 0;
    }
    auto s = std::make_unique<Stream>();
    s->request.protocol = SimProtocol::kHttp2Tls;
    Self(user_data).streams_[frame->hd.stream_id] = std::move(s);
    return 0;
  }

  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                      size_t namelen, const uint8_t* value, size_t valuelen, uint8_t /*flags*/,
                      void* user_data) {
    H2Session& self = Self(user_data);
    Stream* s = self.Find(frame->hd.stream_id);
    if (s == nullptr || frame->hd.type != NGHTTP2_HEADERS) {
      return 0;  // trailers and unknown streams: ignored
    }
    s->header_bytes += namelen + valuelen;
    if (++s->fields > kMaxFields || s->header_bytes > kH2HeaderBytes) {
      return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // nghttp2 resets the stream
    }
    std::string_view n(reinterpret_cast<const char*>(name), namelen);
    std::string_view v(reinterpret_cast<const char*>(value), valuelen);
    SimRequest& req = s->request;
    if (n == ":method") {
      req.method.assign(v);
    } else if (n == ":path") {
      const size_t q = v.find('?');
      req.path.assign(v.substr(0, q));
      req.query.assign(q == std::string_view::npos ? std::string_view() : v.substr(q + 1));
    } else if (n == ":authority") {
      req.headers.emplace_back("host", std::string(v));
    } else if (!n.empty() && n.front() != ':') {
      req.headers.emplace_back(std::string(n), std::string(v));  // lower-case (nghttp2 checks)
    }
    return 0;
  }

  static int OnData(nghttp2_session*, uint8_t /*flags*/, int32_t stream_id, const uint8_t* data,
                    size_t len, void* user_data) {
    H2Session& self = Self(user_data);
    Stream* s = self.Find(stream_id);
    if (s == nullptr || s->refused) {
      return 0;
    }
    if (s->request.body.size() + len > kBodyLimit ||
        self.body_bytes_ + len > kH2ConnectionBodyBytes) {
      self.Refuse(stream_id, *s, NGHTTP2_ENHANCE_YOUR_CALM);
      return 0;
    }
    s->request.body.append(reinterpret_cast<const char*>(data), len);
    self.body_bytes_ += len;
    return 0;
  }

  static int OnFrame(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    if ((frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) ||
        (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) == 0) {
      return 0;
    }
    H2Session& self = Self(user_data);
    Stream* s = self.Find(frame->hd.stream_id);
    if (s == nullptr || s->refused || s->request.method.empty() || s->request.path.empty()) {
      return 0;
    }
    self.Dispatch(frame->hd.stream_id, *s);
    return 0;
  }

  static int OnStreamClose(nghttp2_session*, int32_t stream_id, uint32_t /*error_code*/,
                           void* user_data) {
    H2Session& self = Self(user_data);
    auto it = self.streams_.find(stream_id);
    if (it != self.streams_.end()) {
      self.body_bytes_ -= it->second->request.body.size();
      if (it->second->delay) {
        it->second->delay->cancel();
      }
      self.streams_.erase(it);
    }
    return 0;
  }

  static ssize_t ReadBody(nghttp2_session*, int32_t stream_id, uint8_t* buf, size_t length,
                          uint32_t* data_flags, nghttp2_data_source*, void* user_data) {
    Stream* s = Self(user_data).Find(stream_id);
    if (s == nullptr) {
      return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    const std::string& body = s->response.body;
    const size_t n = std::min(length, body.size() - s->sent);
    std::copy_n(body.data() + s->sent, n, buf);
    s->sent += n;
    if (s->sent == body.size()) {
      *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    }
    return static_cast<ssize_t>(n);
  }

  TlsStream stream_;
  Timer idle_timer_;
  const RequestHandler& handler_;
  const H2Limits limits_;
  nghttp2_session* session_ = nullptr;
  std::map<int32_t, std::unique_ptr<Stream>> streams_;
  size_t body_bytes_ = 0;  // request body bytes held across streams
  std::array<uint8_t, kReadChunk> in_{};
  std::string out_;
  bool writing_ = false;
  bool closed_ = false;
  bool active_ = false;  // a frame arrived since the last idle tick
};

void StartH2Session(TlsStream&& stream, const RequestHandler& handler, const H2Limits& limits) {
  std::make_shared<H2Session>(std::move(stream), handler, limits)->Start();
}

}  // namespace egress::sim
