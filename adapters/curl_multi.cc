#include "adapters/curl_multi.h"

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <curl/curl.h>

#include "dispatcher/check.h"

namespace egress::adapters {

namespace asio = boost::asio;

// One socket curl asked us to watch. Wait handlers hold a shared_ptr to it; `dead` tells them
// curl has dropped the socket (or the multi is gone) and they must not call back.
struct CurlMulti::Socket {
  Socket(asio::io_context& io, int fd) : fd(fd), descriptor(io, fd) {}
  int fd;
  asio::posix::stream_descriptor descriptor;
  int wanted = 0;  // CURL_POLL_IN / CURL_POLL_OUT bits
  bool read_armed = false;
  bool write_armed = false;
  bool dead = false;
};

CurlMulti::CurlMulti(asio::io_context& io, const Limits& limits)
    : io_(io), multi_(curl_multi_init()), timer_(io), alive_(std::make_shared<bool>(true)) {
  EGRESS_CHECK(multi_ != nullptr);
  curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, &CurlMulti::OnSocket);
  curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
  curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, &CurlMulti::OnTimer);
  curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
  curl_multi_setopt(multi_, CURLMOPT_MAX_HOST_CONNECTIONS, limits.max_host_connections);
  curl_multi_setopt(multi_, CURLMOPT_MAX_TOTAL_CONNECTIONS, limits.max_total_connections);
  curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, limits.max_total_connections);
  curl_multi_setopt(multi_, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
}

CurlMulti::~CurlMulti() {
  *alive_ = false;
  timer_.cancel();
  for (auto& [easy, done] : transfers_) {
    curl_multi_remove_handle(multi_, easy);
  }
  transfers_.clear();
  // Cleanup closes cached connections, telling OnSocket to forget their sockets.
  curl_multi_cleanup(multi_);
  for (auto& [fd, sock] : sockets_) {
    sock->dead = true;
    sock->descriptor.release();
  }
}

Status CurlMulti::Add(void* easy, Done done) {
  CURLMcode rc = curl_multi_add_handle(multi_, easy);
  if (rc != CURLM_OK) {
    return Status::Unavailable(std::string("curl_multi_add_handle: ") + curl_multi_strerror(rc));
  }
  transfers_.emplace(easy, std::move(done));
  return Status::Ok();
}

void CurlMulti::Remove(void* easy) {
  if (transfers_.erase(easy) > 0) {
    curl_multi_remove_handle(multi_, easy);
  }
}

int CurlMulti::OnSocket(void* /*easy*/, int fd, int what, void* self_ptr, void* socketp) {
  auto* self = static_cast<CurlMulti*>(self_ptr);
  if (what == CURL_POLL_REMOVE) {
    if (auto it = self->sockets_.find(fd); it != self->sockets_.end()) {
      it->second->dead = true;
      it->second->descriptor.release();  // curl owns the fd and closes it
      self->sockets_.erase(it);
    }
    curl_multi_assign(self->multi_, fd, nullptr);
    return 0;
  }
  std::shared_ptr<Socket> sock;
  if (socketp != nullptr) {
    sock = self->sockets_.at(fd);
  } else {
    sock = std::make_shared<Socket>(self->io_, fd);
    self->sockets_[fd] = sock;
    curl_multi_assign(self->multi_, fd, sock.get());
  }
  sock->wanted = what;
  self->Watch(sock);
  return 0;
}

int CurlMulti::OnTimer(void* /*multi*/, long timeout_ms, void* self_ptr) {
  auto* self = static_cast<CurlMulti*>(self_ptr);
  if (timeout_ms < 0) {
    self->timer_.cancel();
    return 0;
  }
  // Even a 0 ms timeout goes through the loop: no libcurl call inside a libcurl callback. A
  // post is enough for it, and avoids re-arming the timer (a timerfd syscall) per request.
  if (timeout_ms == 0) {
    self->timer_.cancel();
    asio::post(self->io_, [self, alive = self->alive_] {
      if (*alive) {
        self->Action(CURL_SOCKET_TIMEOUT, 0);
      }
    });
    return 0;
  }
  self->timer_.expires_after(std::chrono::milliseconds(timeout_ms));
  self->timer_.async_wait([self, alive = self->alive_](const boost::system::error_code& ec) {
    if (ec || !*alive) {
      return;
    }
    self->Action(CURL_SOCKET_TIMEOUT, 0);
  });
  return 0;
}

void CurlMulti::Watch(const std::shared_ptr<Socket>& sock) {
  using Wait = asio::posix::stream_descriptor::wait_type;
  auto arm = [this, &sock](bool& armed, Wait type, int flag) {
    armed = true;
    sock->descriptor.async_wait(type, [this, sock, flag](const boost::system::error_code& ec) {
      (flag == CURL_CSELECT_IN ? sock->read_armed : sock->write_armed) = false;
      if (sock->dead) {
        return;  // curl dropped the socket, or the multi is gone
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
    auto it = transfers_.find(easy);
    if (it == transfers_.end()) {
      continue;
    }
    Done done = std::move(it->second);
    transfers_.erase(it);
    asio::post(io_, [done = std::move(done), code] { done(code); });
  }
}

}  // namespace egress::adapters
