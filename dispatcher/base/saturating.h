#pragma once

#include <cstdint>
#include <limits>

namespace egress {

// int64 arithmetic that stops at the ends instead of wrapping (which is undefined behaviour): a
// computation fed extreme values gives a very large or very small answer, never a wrapped one.
// The pacing meters use it, so a hostile budget or header can at worst mean "wait a very long
// time", never "allowed".
inline int64_t SatAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) {
    return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  }
  return r;
}

inline int64_t SatSub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) {
    return b < 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  }
  return r;
}

inline int64_t SatMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) {
    return (a < 0) != (b < 0) ? std::numeric_limits<int64_t>::min()
                              : std::numeric_limits<int64_t>::max();
  }
  return r;
}

}  // namespace egress
