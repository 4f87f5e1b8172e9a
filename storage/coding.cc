#include "storage/coding.h"

namespace egress::storage {

void PutBigEndian64(std::string& dst, uint64_t v) {
  char buf[8];
  for (int i = 7; i >= 0; --i) {
    buf[i] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
  dst.append(buf, 8);
}

uint64_t DecodeBigEndian64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) {
    v = (v << 8) | static_cast<uint8_t>(p[i]);
  }
  return v;
}

void PutVarint64(std::string& dst, uint64_t v) {
  while (v >= 0x80) {
    dst.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  dst.push_back(static_cast<char>(v));
}

bool GetVarint64(std::string_view& in, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift <= 63 && !in.empty(); shift += 7) {
    const auto byte = static_cast<uint8_t>(in.front());
    in.remove_prefix(1);
    v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      return true;
    }
  }
  return false;
}

void PutLengthPrefixed(std::string& dst, std::string_view bytes) {
  PutVarint64(dst, bytes.size());
  dst.append(bytes);
}

bool GetLengthPrefixed(std::string_view& in, std::string_view& bytes) {
  uint64_t len = 0;
  if (!GetVarint64(in, len) || len > in.size()) {
    return false;
  }
  bytes = in.substr(0, len);
  in.remove_prefix(len);
  return true;
}

}  // namespace egress::storage
