#include "tests/simulator/sim_response_format.h"

#include <ostream>
#include <string>

#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/string_body.hpp>
#include <gtest/gtest.h>

namespace egress::sim {
namespace {

namespace http = boost::beast::http;

// What the server wrote before: the Beast message built from `sim`, serialized by Beast.
std::string BeastText(const SimResponse& sim, unsigned version, bool keep_alive, bool* stays) {
  http::response<http::string_body> res;
  res.version(version);
  res.keep_alive(keep_alive);
  res.result(static_cast<unsigned>(sim.status));
  for (const auto& [name, value] : sim.headers) {
    res.set(name, value);
  }
  if (!sim.body.empty() || sim.status != 204) {
    res.set(http::field::content_type, std::string(sim.content_type));
  }
  res.body() = sim.body;
  res.prepare_payload();
  *stays = res.keep_alive();
  http::serializer<false, http::string_body> sr(res);
  std::string out;
  boost::beast::error_code ec;
  while (!sr.is_done()) {
    sr.next(ec, [&](boost::beast::error_code&, const auto& buffers) {
      out += boost::beast::buffers_to_string(buffers);
      sr.consume(boost::beast::buffer_bytes(buffers));
    });
  }
  return out;
}

void ExpectSameAsBeast(const SimResponse& sim) {
  for (unsigned version : {10u, 11u}) {
    for (bool keep_alive : {false, true}) {
      bool beast_stays = false;
      std::string expected = BeastText(sim, version, keep_alive, &beast_stays);
      std::string out = "kept|";
      bool stays = AppendHttpResponse(sim, version, keep_alive, out);
      EXPECT_EQ(out, "kept|" + expected) << "version " << version << " keep_alive " << keep_alive;
      EXPECT_EQ(stays, beast_stays) << "version " << version << " keep_alive " << keep_alive;
    }
  }
}

// Verifies the usual JSON answers are written byte for byte as Beast's serializer wrote them.
TEST(SimResponseFormatTest, JsonAnswersMatchBeast) {
  ExpectSameAsBeast(JsonResponse(200, R"({"ok":true})"));
  ExpectSameAsBeast(JsonResponse(404, R"({"error":"no such simulated endpoint"})"));
  ExpectSameAsBeast(JsonResponse(200, ""));
}

// Verifies headers keep Beast's set() order and replacement (any case), values are trimmed,
// and an empty 204 has no Content-Type but a zero Content-Length.
TEST(SimResponseFormatTest, HeadersMatchBeast) {
  SimResponse r = JsonResponse(429, R"({"error":"too many requests"})");
  r.SetHeader("Retry-After", "3");
  r.SetHeader("X-RateLimit-Bucket", "  a06de45e2b5c7f3d\t");
  r.SetHeader("content-type", "text/html");
  r.SetHeader("retry-after", "4");
  ExpectSameAsBeast(r);

  SimResponse empty;
  empty.status = 204;
  ExpectSameAsBeast(empty);

  SimResponse text = JsonResponse(503, "upstream busy");
  text.content_type = "text/plain";
  ExpectSameAsBeast(text);

  SimResponse odd = JsonResponse(599, "{}");
  ExpectSameAsBeast(odd);
}

// Verifies a Connection header from a fault plan decides keep-alive as Beast's message did.
TEST(SimResponseFormatTest, ConnectionHeaderDecidesKeepAlive) {
  SimResponse close = JsonResponse(503, "{}");
  close.SetHeader("Connection", "close");
  ExpectSameAsBeast(close);
  SimResponse keep = JsonResponse(200, "{}");
  keep.SetHeader("connection", "Keep-Alive, Upgrade");
  ExpectSameAsBeast(keep);
}

}  // namespace
}  // namespace egress::sim
