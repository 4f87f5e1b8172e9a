#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/optional.hpp>

namespace egress::service {

// The text of an answer: owned by the answer, or shared by many answers and written to each
// without a copy. GET /metrics serves one text to every scrape while it is kept (1-10 s,
// Service::MetricsTextKept): at 10,000 tenants it is 9.5 MB, and a copy per scrape held the loop
// 20-60 ms (bench/README.md, section 12).
class ResponseText {
 public:
  ResponseText() = default;
  ResponseText(std::string text) : own_(std::move(text)) {}  // NOLINT: a string is a text
  ResponseText& operator=(std::string text) {
    own_ = std::move(text);
    shared_.reset();
    return *this;
  }
  // `text` is not changed while any answer holds it.
  static ResponseText Shared(std::shared_ptr<const std::string> text) {
    ResponseText out;
    out.shared_ = std::move(text);
    return out;
  }

  std::string_view view() const { return shared_ ? std::string_view(*shared_) : own_; }
  size_t size() const { return view().size(); }
  bool empty() const { return view().empty(); }
  friend bool operator==(const ResponseText& a, std::string_view b) { return a.view() == b; }

 private:
  std::string own_;
  std::shared_ptr<const std::string> shared_;
};

// A Beast body of a ResponseText, written kChunk bytes at a time: each piece is one send on
// the socket, and the loop runs other handlers between them. The first piece is sent within
// the turn that answers (Asio tries a send at once), so a piece is as long as the loop is held:
// a 9.5 MB text written in one piece was copied into the socket's buffers within that turn,
// 14-20 ms; in pieces of 1 MiB each /metrics scrape still held the loop ~2 ms at its first
// send (bench/README.md, section 12). 512 KiB keeps a page of 1,000 destinations (~400 KB)
// one send: in pieces of 256 KiB such a page, then made in one turn, waited for the loop
// between them (page-of-1,000 medians of 23.6 and 32.5 ms against 18.8 and 22.0, in
// alternation). Only written: the service reads no response into it.
struct ResponseBody {
  using value_type = ResponseText;
  static constexpr size_t kChunk = 512 << 10;

  static std::uint64_t size(const value_type& body) { return body.size(); }

  class writer {
   public:
    using const_buffers_type = boost::asio::const_buffer;

    template <bool isRequest, class Fields>
    writer(const boost::beast::http::header<isRequest, Fields>&, const value_type& body)
        : text_(body.view()) {}

    void init(boost::beast::error_code& ec) { ec = {}; }

    boost::optional<std::pair<const_buffers_type, bool>> get(boost::beast::error_code& ec) {
      ec = {};
      const std::string_view piece = text_.substr(0, kChunk);
      text_.remove_prefix(piece.size());
      return {{const_buffers_type(piece.data(), piece.size()), !text_.empty()}};
    }

   private:
    std::string_view text_;  // what is not written yet
  };
};

}  // namespace egress::service
