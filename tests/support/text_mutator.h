#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace egress {

// Deterministic random edits of text for differential tests (a parser against a reference):
// xorshift64 from a fixed seed, so every run tries the same inputs.
class TextMutator {
 public:
  explicit TextMutator(uint64_t seed = 0x9E3779B97F4A7C15u) : state_(seed) {}

  // A number in [0, n).
  uint64_t Next(uint64_t n) {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return state_ % n;
  }

  // One of `seeds` with 1 to 3 edits: a piece inserted, 1-3 bytes erased, or a byte replaced by
  // a piece, at random places.
  std::string Mutate(const std::vector<std::string>& seeds,
                     const std::vector<std::string>& pieces) {
    std::string text = seeds[Next(seeds.size())];
    const int edits = 1 + static_cast<int>(Next(3));
    for (int e = 0; e < edits; ++e) {
      const size_t at = Next(text.size() + 1);
      switch (Next(3)) {
        case 0:
          text.insert(at, pieces[Next(pieces.size())]);
          break;
        case 1:
          if (at < text.size()) {
            text.erase(at, 1 + Next(3));
          }
          break;
        default:
          if (at < text.size()) {
            text.replace(at, 1, pieces[Next(pieces.size())]);
          }
          break;
      }
    }
    return text;
  }

 private:
  uint64_t state_;
};

}  // namespace egress
