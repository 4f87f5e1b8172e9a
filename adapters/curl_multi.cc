#include "adapters/curl_multi.h"

#include <unistd.h>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <curl/curl.h>

#include "dispatcher/base/check.h"

namespace egress::adapters {

namespace asio = boost::asio;

// One socket curl asked us to watch, or an adopted connection socket. Wait handlers hold a
// shared_ptr to it; `dead` tells them the socket is gone (or the multi is) and they must not
// call back.
struct CurlMulti::Socket {
  Socket(asio::io_context& io, int fd, bool adopted)
      : fd(fd), descriptor(io, fd), adopted(adopted) {}
  int fd;
  asio::posix::stream_descriptor descriptor;
  bool adopted;       // closed through OnCloseSocket, so it may stay registered while idle
  int wanted = 0;     // CURL_POLL_IN / CURL_POLL_OUT bits
  bool idle = false;  // curl said CURL_POLL_REMOVE and has not asked for it since
  bool read_armed = false;
  bool write_armed = false;
  bool dead = false;
};

CurlMulti::CurlMulti(asio::io_context& io, const Clock& clock, const Limits& limits, Done done)
    : io_(io),
      clock_(clock),
      multi_(curl_multi_init()),
      done_(std::move(done)),
      alive_(std::make_shared<bool>(true)),
      timer_(io) {
  EGRESS_CHECK(multi_ != nullptr);
  curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, &CurlMulti::OnSocket);
  curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
  curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, &CurlMulti::OnTimer);
  curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
  curl_multi_setopt(multi_, CURLMOPT_MAX_HOST_CONNECTIONS, limits.max_host_connections);
  curl_multi_setopt(multi_, CURLMOPT_MAX_TOTAL_CONNECTIONS, limits.max_total_connections);
  curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, limits.max_total_connections);
  curl_multi_setopt(multi_, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
  curl_multi_setopt(multi_, CURLMOPT_MAX_CONCURRENT_STREAMS, limits.max_concurrent_streams);
}

CurlMulti::~CurlMulti() {
  // curl_multi_cleanup must not find easy handles still added (curl's documented order).
  EGRESS_CHECK(running_ == 0);
  *alive_ = false;
  timer_.cancel();
  // Cleanup closes cached connections, through OnCloseSocket for the adopted sockets.
  curl_multi_cleanup(multi_);
  for (auto& [fd, sock] : sockets_) {
    sock->dead = true;
    sock->descriptor.release();
  }
}

void CurlMulti::ConfigureEasy(void* easy) {
  curl_easy_setopt(easy, CURLOPT_CLOSESOCKETFUNCTION, &CurlMulti::OnCloseSocket);
  curl_easy_setopt(easy, CURLOPT_CLOSESOCKETDATA, this);
}

Status CurlMulti::Add(void* easy) {
  CURLMcode rc = curl_multi_add_handle(multi_, easy);
  if (rc != CURLM_OK) {
    return Status::Unavailable(std::string("curl_multi_add_handle: ") + curl_multi_strerror(rc));
  }
  ++running_;
  return Status::Ok();
}

void CurlMulti::Remove(void* easy) {
  for (auto& [finished, code] : finished_) {
    if (finished == easy) {
      finished = nullptr;  // already out of the multi handle; drop its completion
      return;
    }
  }
  curl_multi_remove_handle(multi_, easy);
  --running_;
}

void CurlMulti::Adopt(int fd) {
  Forget(fd);  // a stale entry would watch the wrong file
  ++sockets_opened_;
  NewSocket(fd, /*adopted=*/true);
}

std::shared_ptr<CurlMulti::Socket> CurlMulti::NewSocket(int fd, bool adopted) {
  auto sock = std::make_shared<Socket>(io_, fd, adopted);
  sockets_[fd] = sock;
  return sock;
}

void CurlMulti::Forget(int fd) {
  auto it = sockets_.find(fd);
  if (it == sockets_.end()) {
    return;
  }
  it->second->dead = true;
  it->second->descriptor.release();  // deregisters; curl (or OnCloseSocket) closes the fd
  sockets_.erase(it);
}

int CurlMulti::OnSocket(void* /*easy*/, int fd, int what, void* self_ptr, void* /*socketp*/) {
  auto* self = static_cast<CurlMulti*>(self_ptr);
  auto it = self->sockets_.find(fd);
  if (what == CURL_POLL_REMOVE) {
    if (it == self->sockets_.end()) {
      return 0;
    }
    if (it->second->adopted) {
      it->second->wanted = 0;  // an idle keep-alive connection: stay registered
      it->second->idle = true;
    } else {
      self->Forget(fd);  // curl closes it without telling us
    }
    return 0;
  }
  std::shared_ptr<Socket> sock =
      it != self->sockets_.end() ? it->second : self->NewSocket(fd, /*adopted=*/false);
  if (sock->idle && (what & CURL_POLL_OUT) != 0) {
    // The reactor is edge-triggered: writability that arrived while nobody waited is not
    // reported again. Register afresh, which reports the current state. (Readability while
    // idle needs no such care: curl polls an idle connection before reusing it and drops it
    // when it is readable.)
    self->Forget(fd);
    sock = self->NewSocket(fd, /*adopted=*/true);
  }
  sock->idle = false;
  sock->wanted = what;
  self->Watch(sock);
  return 0;
}

int CurlMulti::OnCloseSocket(void* self_ptr, int fd) {
  static_cast<CurlMulti*>(self_ptr)->Forget(fd);
  return close(fd);
}

int CurlMulti::OnTimer(void* /*multi*/, long timeout_ms, void* self_ptr) {
  auto* self = static_cast<CurlMulti*>(self_ptr);
  ++self->timer_calls_;
  if (timeout_ms < 0) {
    self->due_.reset();  // a pending wait fires and finds nothing due
    return 0;
  }
  if (timeout_ms == 0) {
    // Even a 0 ms timeout goes through the loop: no libcurl call inside a libcurl callback.
    self->due_.reset();
    self->PostTimeout();
    return 0;
  }
  const SteadyTime now = self->clock_.Now();
  self->due_ = now + std::chrono::milliseconds(timeout_ms);
  if (!self->armed_.has_value() || *self->due_ < *self->armed_) {
    self->ArmTimer(now);
  }
  return 0;
}

void CurlMulti::ArmTimer(SteadyTime now) {
  armed_ = *due_;
  timer_.expires_after(*due_ - now);
  timer_.async_wait([this, alive = alive_](const boost::system::error_code& ec) {
    if (ec || !*alive) {
      return;  // re-armed (aborted), or the multi is gone
    }
    armed_.reset();
    if (!due_.has_value()) {
      return;
    }
    if (const SteadyTime t = clock_.Now(); *due_ > t) {
      ArmTimer(t);  // fired for an earlier timeout that has since gone
      return;
    }
    const uint64_t calls = timer_calls_;
    Action(CURL_SOCKET_TIMEOUT, 0);
    if (*alive && timer_calls_ == calls && due_.has_value()) {
      // curl found nothing due yet (it counts whole milliseconds) and will not call OnTimer
      // again for the same timeout: look again shortly.
      const SteadyTime t = clock_.Now();
      due_ = t + std::chrono::milliseconds(1);
      ArmTimer(t);
    }
  });
}

void CurlMulti::PostTimeout() {
  if (timeout_posted_) {
    return;  // one socket_action runs every timeout that is due
  }
  timeout_posted_ = true;
  asio::post(io_, [this, alive = alive_] {
    if (*alive) {
      timeout_posted_ = false;
      Action(CURL_SOCKET_TIMEOUT, 0);
    }
  });
}

void CurlMulti::Watch(const std::shared_ptr<Socket>& sock) {
  using Wait = asio::posix::stream_descriptor::wait_type;
  auto arm = [this, &sock](bool& armed, Wait type, int flag) {
    armed = true;
    sock->descriptor.async_wait(type, [this, sock, flag](const boost::system::error_code& ec) {
      const bool read = flag == CURL_CSELECT_IN;
      (read ? sock->read_armed : sock->write_armed) = false;
      if (sock->dead) {
        return;  // the socket was closed, or the multi is gone
      }
      if ((sock->wanted & (read ? CURL_POLL_IN : CURL_POLL_OUT)) == 0) {
        return;  // idle, or curl no longer waits for this direction
      }
      Action(sock->fd, ec ? CURL_CSELECT_ERR : flag);
    });
  };
  if ((sock->wanted & CURL_POLL_IN) != 0 && !sock->read_armed) {
    arm(sock->read_armed, Wait::wait_read, CURL_CSELECT_IN);
  }
  if ((sock->wanted & CURL_POLL_OUT) != 0 && !sock->write_armed) {
    arm(sock->write_armed, Wait::wait_write, CURL_CSELECT_OUT);
  }
}

void CurlMulti::Action(int fd, int flags) {
  int running = 0;
  curl_multi_socket_action(multi_, fd, flags, &running);
  Drain();
  // Re-arm a socket that is still wanted in a direction whose wait just fired.
  if (fd != CURL_SOCKET_TIMEOUT) {
    if (auto it = sockets_.find(fd); it != sockets_.end()) {
      Watch(it->second);
    }
  }
}

void CurlMulti::Drain() {
  int pending = 0;
  while (CURLMsg* msg = curl_multi_info_read(multi_, &pending)) {
    if (msg->msg != CURLMSG_DONE) {
      continue;
    }
    void* easy = msg->easy_handle;
    const int code = msg->data.result;
    curl_multi_remove_handle(multi_, easy);  // msg is invalid from here on
    --running_;
    finished_.emplace_back(easy, code);
  }
  if (!finished_.empty() && !complete_posted_) {
    complete_posted_ = true;
    asio::post(io_, [this, alive = alive_] {
      if (*alive) {
        Complete();
      }
    });
  }
}

void CurlMulti::Complete() {
  complete_posted_ = false;
  auto alive = alive_;
  // Callbacks may Add (curl calls nothing back then) or Remove (which clears an entry), but
  // run no socket_action, so finished_ does not grow meanwhile.
  for (size_t i = 0; i < finished_.size(); ++i) {
    auto [easy, code] = finished_[i];
    if (easy == nullptr) {
      continue;
    }
    finished_[i].first = nullptr;
    done_(easy, code);
    if (!*alive) {
      return;
    }
  }
  finished_.clear();
}

}  // namespace egress::adapters
