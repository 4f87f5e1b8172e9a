#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "adapters/http_transport.h"

namespace egress::adapters {

// An HttpTransport that sends nothing: it records each request and answers it from a script
// the test sets, completing on the io_context by post (never inline), as CurlTransport does.
// Answers are taken in order; when the script is empty every request gets `fallback` (default:
// 200 with body "ok"). With Hold(true) answers wait until Release(), so a test can look at the
// state while requests are in flight. Runs on the io_context's thread, like any transport.
class ScriptedTransport final : public HttpTransport {
 public:
  explicit ScriptedTransport(boost::asio::io_context& io) : io_(io) {}

  // Appends an answer: a response of any status, or a transport error.
  void Push(Result<HttpResponse> answer) { script_.push_back(std::move(answer)); }
  void PushStatus(int status, HttpHeaders headers = {}, std::string body = "") {
    Push(HttpResponse{.status = status, .headers = std::move(headers), .body = std::move(body)});
  }
  void SetFallback(Result<HttpResponse> answer) { fallback_ = std::move(answer); }

  // While held, answers are kept (in order) until Release().
  void Hold(bool hold) { hold_ = hold; }
  // Posts every held answer; returns how many.
  size_t Release() {
    std::deque<Pending> held = std::move(held_);
    held_.clear();
    for (Pending& p : held) {
      Complete(std::move(p));
    }
    return held.size();
  }

  void Send(HttpRequest request, HttpCallback done) override {
    requests_.push_back(std::move(request));
    Result<HttpResponse> answer = fallback_;
    if (!script_.empty()) {
      answer = std::move(script_.front());
      script_.pop_front();
    }
    ++in_flight_;
    Pending p{std::move(answer), std::move(done)};
    if (hold_) {
      held_.push_back(std::move(p));
    } else {
      Complete(std::move(p));
    }
  }
  size_t InFlight() const override { return in_flight_; }
  void CancelAll() override {
    for (Pending& p : held_) {
      p.answer = Status::Cancelled("transport shut down");
    }
    Release();
  }

  // Every request sent, in order.
  const std::vector<HttpRequest>& requests() const { return requests_; }
  size_t script_left() const { return script_.size(); }

 private:
  struct Pending {
    Result<HttpResponse> answer;
    HttpCallback done;
  };

  void Complete(Pending p) {
    boost::asio::post(io_, [this, p = std::move(p)]() mutable {
      --in_flight_;
      p.done(std::move(p.answer));
    });
  }

  boost::asio::io_context& io_;
  std::deque<Result<HttpResponse>> script_;
  Result<HttpResponse> fallback_ = HttpResponse{.status = 200, .body = "ok"};
  std::vector<HttpRequest> requests_;
  std::deque<Pending> held_;
  bool hold_ = false;
  size_t in_flight_ = 0;
};

}  // namespace egress::adapters
