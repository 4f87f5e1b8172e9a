// ResponseBody: an answer's text, owned or shared by many answers without a copy, written in
// pieces of at most kChunk bytes.

#include "dispatcher/service/api/response_body.h"

#include <memory>
#include <string>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/serializer.hpp>
#include <gtest/gtest.h>

#include "dispatcher/service/api/http_server.h"

namespace egress::service {
namespace {

namespace http = boost::beast::http;

// What serializing `res` writes, and the size of each piece the serializer gave (the first holds
// the header too).
struct Written {
  std::string wire;
  std::vector<size_t> pieces;
};

Written Serialize(HttpResponse& res) {
  Written out;
  http::serializer<false, ResponseBody> sr(res);
  boost::beast::error_code ec;
  while (!sr.is_done()) {
    size_t n = 0;
    sr.next(ec, [&](boost::beast::error_code&, const auto& buffers) {
      for (auto it = boost::asio::buffer_sequence_begin(buffers);
           it != boost::asio::buffer_sequence_end(buffers); ++it) {
        boost::asio::const_buffer b = *it;
        out.wire.append(static_cast<const char*>(b.data()), b.size());
        n += b.size();
      }
    });
    EXPECT_FALSE(ec) << ec.message();
    if (ec) {
      break;
    }
    out.pieces.push_back(n);
    sr.consume(n);
  }
  return out;
}

HttpResponse Answer(ResponseText text) {
  HttpResponse res{http::status::ok, 11};
  res.body() = std::move(text);
  res.prepare_payload();
  return res;
}

// Verifies that two answers of one shared text send the same bytes, not copies of them, and that
// the text lives as long as an answer holds it.
TEST(ResponseBodyTest, AnswersOfASharedTextHoldOneCopy) {
  auto text = std::make_shared<const std::string>(1000, 'm');
  const char* bytes = text->data();
  HttpResponse a = Answer(ResponseText::Shared(text));
  HttpResponse b = Answer(ResponseText::Shared(text));
  EXPECT_EQ(a.body().view().data(), bytes);
  EXPECT_EQ(b.body().view().data(), bytes);
  std::weak_ptr<const std::string> weak = text;
  text.reset();  // as the service drops its cached text a second after making it
  ASSERT_FALSE(weak.expired()) << "the answers still hold it";
  EXPECT_EQ(a.body(), std::string(1000, 'm'));
  EXPECT_EQ(a[http::field::content_length], "1000");
  a = HttpResponse();
  b = HttpResponse();
  EXPECT_TRUE(weak.expired());
}

// Verifies that a text over kChunk is written whole, in pieces of at most kChunk bytes, after its
// header with its length; an owned text as a shared one.
TEST(ResponseBodyTest, ALargeTextIsWrittenWholeInPiecesOfAtMostAChunk) {
  std::string text(ResponseBody::kChunk * 2 + 123, ' ');
  for (size_t i = 0; i < text.size(); ++i) {
    text[i] = static_cast<char>('a' + i % 26);
  }
  for (bool shared : {false, true}) {
    HttpResponse res = Answer(shared ? ResponseText::Shared(std::make_shared<std::string>(text))
                                     : ResponseText(text));
    const Written w = Serialize(res);
    const size_t head = w.wire.find("\r\n\r\n");
    ASSERT_NE(head, std::string::npos);
    EXPECT_NE(w.wire.find("Content-Length: " + std::to_string(text.size())), std::string::npos);
    EXPECT_EQ(w.wire.substr(head + 4), text) << "shared " << shared;
    ASSERT_EQ(w.pieces.size(), 3u);
    EXPECT_EQ(w.pieces[0], head + 4 + ResponseBody::kChunk);
    EXPECT_EQ(w.pieces[1], ResponseBody::kChunk);
    EXPECT_EQ(w.pieces[2], 123u);
  }
}

// Verifies that an empty text and an owned text given anew replace what was there.
TEST(ResponseBodyTest, AnOwnedTextReplacesASharedOne) {
  ResponseText t = ResponseText::Shared(std::make_shared<const std::string>("shared"));
  EXPECT_EQ(t, "shared");
  t = std::string("own");
  EXPECT_EQ(t, "own");
  EXPECT_EQ(t.size(), 3u);
  EXPECT_TRUE(ResponseText().empty());
  HttpResponse res = Answer(ResponseText());
  EXPECT_EQ(Serialize(res).wire.find("Content-Length: 0"), 17u) << "after HTTP/1.1 200 OK\\r\\n";
}

}  // namespace
}  // namespace egress::service
