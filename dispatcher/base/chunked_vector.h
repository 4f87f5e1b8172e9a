#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace egress {

// A growable array of default-constructed T in fixed chunks of kChunk elements: indices and
// references stay valid as it grows, nothing is copied on growth, and the slack is under one
// chunk (a std::vector's doubling leaves up to half its capacity unused). Not thread-safe.
template <class T, size_t kChunk = 512>
class ChunkedVector {
 public:
  T& operator[](size_t i) { return chunks_[i / kChunk][i % kChunk]; }
  const T& operator[](size_t i) const { return chunks_[i / kChunk][i % kChunk]; }
  size_t size() const { return size_; }

  // Appends a default-constructed element and returns its index.
  size_t Grow() {
    if (size_ == chunks_.size() * kChunk) {
      chunks_.push_back(std::make_unique<T[]>(kChunk));
    }
    return size_++;
  }

 private:
  std::vector<std::unique_ptr<T[]>> chunks_;
  size_t size_ = 0;
};

}  // namespace egress
