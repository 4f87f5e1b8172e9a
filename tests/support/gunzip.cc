#include "tests/support/gunzip.h"

#include <zlib.h>

namespace egress {

std::optional<std::string> Gunzip(std::string_view gz) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) {  // windowBits 15 + 16: a gzip member only
    return std::nullopt;
  }
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  std::string out;
  char piece[4096];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(piece);
    z.avail_out = sizeof piece;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(piece, sizeof piece - z.avail_out);
  }
  const bool whole = rc == Z_STREAM_END && z.avail_in == 0;
  inflateEnd(&z);
  return whole ? std::optional<std::string>(std::move(out)) : std::nullopt;
}

}  // namespace egress
