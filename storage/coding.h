#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace egress::storage {

// Byte-level encodings shared by keys and records (leveldb util/coding.h in spirit).

// Fixed 8-byte big-endian: byte order equals numeric order for non-negative values.
void PutBigEndian64(std::string& dst, uint64_t v);
uint64_t DecodeBigEndian64(const char* p);

// Unsigned LEB128 varint.
void PutVarint64(std::string& dst, uint64_t v);
// Reads a varint from the front of `in` and advances it; false if truncated or overlong.
bool GetVarint64(std::string_view& in, uint64_t& v);

// A varint length followed by the bytes.
void PutLengthPrefixed(std::string& dst, std::string_view bytes);
bool GetLengthPrefixed(std::string_view& in, std::string_view& bytes);

// Zig-zag maps signed to unsigned so small negatives stay small.
inline uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t UnZigZag(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

}  // namespace egress::storage
