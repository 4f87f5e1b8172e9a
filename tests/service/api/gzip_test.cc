// The gzip content coding of GET /metrics: which Accept-Encoding values accept it, and that what
// Gzip makes inflates (with zlib's own inflate, as a client would: tests/support/gunzip.h) to
// the text it was made of.

#include "dispatcher/service/api/gzip.h"

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>
#include <gtest/gtest.h>

#include "tests/support/gunzip.h"

namespace egress::service {
namespace {

// Verifies the values that accept gzip: listed (any case, with spaces, among others), x-gzip,
// a weight above 0 (at most three decimals), or "*" when gzip is not listed.
TEST(GzipTest, AcceptedWhenListedWithAWeightAboveZero) {
  for (std::string_view accept :
       {"gzip", "GZIP", "x-gzip", "gzip, deflate, br", "br;q=1.0, gzip;q=0.5", " gzip ;q=0.001",
        "identity, gzip;Q=1", "*", "*;q=0.1", "deflate, *", "gzip;q=0, gzip;q=1", "gzip;level=9"}) {
    EXPECT_TRUE(AcceptsGzip(accept)) << accept;
  }
}

// Verifies the values that do not: empty, other codings, a weight of 0, gzip refused while "*"
// accepts, a weight that is not a qvalue (more than three decimals, above 1, a sign, empty),
// a weight written with spaces around its "=", gzip as part of another token.
TEST(GzipTest, RefusedWhenAbsentZeroOrNotAQvalue) {
  for (std::string_view accept :
       {"", "identity", "deflate, br", "gzip;q=0", "gzip; q=0.000", "gzip;q=0, *", "*;q=0",
        "gzip;q=0.0001", "gzip;q=1.5", "gzip;q=1.01", "gzip;q=-1", "gzip;q=", "gzip;q=.5", "gzipx",
        "x-gzip2", ",,,;;;", "gzip;q=0.5x"}) {
    EXPECT_FALSE(AcceptsGzip(accept)) << accept;
  }
}

// Verifies a request's Accept-Encoding lines are read as one list: gzip listed on any line,
// refused on one and "*" on another, or none at all.
TEST(GzipTest, ARequestsLinesAreOneList) {
  const auto request = [](std::initializer_list<std::string_view> lines) {
    HttpRequest req{boost::beast::http::verb::get, "/metrics", 11};
    for (std::string_view line : lines) {
      req.insert(boost::beast::http::field::accept_encoding, std::string(line));
    }
    return req;
  };
  EXPECT_TRUE(AcceptsGzip(request({"br", "gzip"})));
  EXPECT_TRUE(AcceptsGzip(request({"gzip;q=0.5", "br"})));
  EXPECT_FALSE(AcceptsGzip(request({"*", "gzip;q=0"})));
  EXPECT_FALSE(AcceptsGzip(request({"br", "deflate"})));
  EXPECT_FALSE(AcceptsGzip(request({})));
}

// Verifies a text inflates back to itself: empty, short, and larger than the pieces the output
// grows by and than zlib's window, with bytes of every value; and that a text of repeated lines
// (as /metrics is) comes out much smaller.
TEST(GzipTest, InflatesToTheTextItWasMadeOf) {
  std::string varied;
  for (int i = 0; i < 3'000'000; ++i) {
    varied.push_back(static_cast<char>((i * 2654435761u) >> 13));
  }
  std::string lines;
  for (int i = 0; i < 100'000; ++i) {
    lines += "relay_egress_tenant_queue_depth{tenant=\"t" + std::to_string(i) +
             "\",platform=\"webhook\",state=\"deferred\"} 1\n";
  }
  for (const std::string& text : {std::string(), std::string("a"), varied, lines}) {
    const std::optional<std::string> gz = Gzip(text);
    ASSERT_TRUE(gz.has_value()) << text.size();
    ASSERT_GE(gz->size(), 18u) << "a gzip header and trailer at least";
    EXPECT_EQ(static_cast<unsigned char>((*gz)[0]), 0x1f);
    EXPECT_EQ(static_cast<unsigned char>((*gz)[1]), 0x8b);
    const std::optional<std::string> back = Gunzip(*gz);
    ASSERT_TRUE(back.has_value()) << text.size();
    EXPECT_TRUE(*back == text) << text.size() << " bytes came back as " << back->size();
  }
  EXPECT_LT(Gzip(lines)->size(), lines.size() / 8);
}

}  // namespace
}  // namespace egress::service
