#include "dispatcher/service/api/gzip.h"

#include <zlib.h>

#include <algorithm>
#include <cstddef>

#include "adapters/http_header.h"

namespace egress::service {
namespace {

// "gzip" or "x-gzip" (RFC 9110 section 8.4.1.3), in any case.
bool IsGzip(std::string_view coding) {
  return adapters::EqualsIgnoreCase(coding, "gzip") || adapters::EqualsIgnoreCase(coding, "x-gzip");
}

// The weight of an element's parameters ("q=0.5"; 1 when none is given), or -1 when a weight is
// given and is not a qvalue: "0" ["." 0*3DIGIT] or "1" ["." 0*3"0"].
int WeightPerMille(std::string_view params) {
  int weight = 1000;
  while (!params.empty()) {
    const size_t semi = params.find(';');
    const std::string_view param = adapters::TrimOws(params.substr(0, semi));
    params = semi == std::string_view::npos ? std::string_view() : params.substr(semi + 1);
    const std::string_view name = adapters::TrimOws(param.substr(0, param.find('=')));
    if (name != "q" && name != "Q") {
      continue;  // another parameter: none is defined for codings
    }
    if (param.size() < 2 || param[1] != '=') {
      return -1;  // "q", "q =0": a weight, not written as one ("q=" and the value, RFC 9110 12.4.2)
    }
    const std::string_view q = param.substr(2);
    if (q.empty() || (q[0] != '0' && q[0] != '1')) {
      return -1;
    }
    int value = q[0] == '1' ? 1000 : 0;
    if (q.size() > 1) {
      if (q[1] != '.' || q.size() > 5) {
        return -1;
      }
      int scale = 100;
      for (char c : q.substr(2)) {
        if (c < '0' || c > '9' || (value == 1000 && c != '0')) {
          return -1;
        }
        value += (c - '0') * scale;
        scale /= 10;
      }
    }
    weight = value;
  }
  return weight;
}

}  // namespace

bool AcceptsGzip(std::string_view accept_encoding) {
  int gzip = -2;  // not listed
  int any = -2;
  while (!accept_encoding.empty()) {
    const size_t comma = accept_encoding.find(',');
    const std::string_view element = accept_encoding.substr(0, comma);
    accept_encoding =
        comma == std::string_view::npos ? std::string_view() : accept_encoding.substr(comma + 1);
    const size_t semi = element.find(';');
    const std::string_view coding = adapters::TrimOws(element.substr(0, semi));
    const std::string_view params =
        semi == std::string_view::npos ? std::string_view() : element.substr(semi + 1);
    if (IsGzip(coding)) {
      gzip = std::max(gzip, WeightPerMille(params));
    } else if (coding == "*") {
      any = std::max(any, WeightPerMille(params));
    }
  }
  return gzip != -2 ? gzip > 0 : any > 0;
}

bool AcceptsGzip(const HttpRequest& request) {
  std::string accept;
  for (auto [it, end] = request.equal_range(boost::beast::http::field::accept_encoding); it != end;
       ++it) {
    accept.append(accept.empty() ? "" : ",").append(it->value().data(), it->value().size());
  }
  return AcceptsGzip(accept);
}

std::optional<std::string> Gzip(std::string_view text) {
  z_stream z{};
  // windowBits 15 + 16: a gzip header and trailer around the deflate stream.
  if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return std::nullopt;
  }
  // Grown a piece at a time from an eighth of the text (a /metrics text compresses 25x at this
  // level), not reserved at deflateBound (larger than the text).
  constexpr size_t kPiece = 256 << 10;
  constexpr size_t kMaxIn = 1 << 30;  // avail_in is 32 bits
  std::string out;
  out.reserve(text.size() / 8 + 64);
  int rc = Z_OK;
  size_t written = 0;
  while (rc == Z_OK) {
    if (z.avail_in == 0 && !text.empty()) {
      const size_t n = std::min(text.size(), kMaxIn);
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
      z.avail_in = static_cast<uInt>(n);
      text.remove_prefix(n);
    }
    if (written == out.size()) {
      out.resize(out.size() + std::max(kPiece, out.capacity() - out.size()));
    }
    z.next_out = reinterpret_cast<Bytef*>(out.data() + written);
    z.avail_out = static_cast<uInt>(std::min(out.size() - written, kMaxIn));
    const uInt before = z.avail_out;
    rc = deflate(&z, text.empty() ? Z_FINISH : Z_NO_FLUSH);
    written += before - z.avail_out;
    if (rc == Z_BUF_ERROR) {
      rc = Z_OK;  // no progress possible without more room: the next turn gives it
    }
  }
  deflateEnd(&z);
  if (rc != Z_STREAM_END) {
    return std::nullopt;
  }
  out.resize(written);
  out.shrink_to_fit();
  return out;
}

}  // namespace egress::service
