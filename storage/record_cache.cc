#include "storage/record_cache.h"

namespace egress::storage {

namespace {

// What one entry takes from the heap, not only its bytes: the hash node (the next pointer, two
// strings, the cached hash), and each string's block as allocated (a short id lives in the
// string itself), each with the allocator's header (16 bytes in glibc). Counting only the bytes
// had let a cap of 64 MiB hold about 150 MiB once a million deliveries were queued
// (bench/README.md, section 14).
constexpr size_t kMallocHeader = 16;
constexpr size_t kNodeBytes =
    sizeof(void*) + 2 * sizeof(std::string) + sizeof(size_t) + kMallocHeader;
constexpr size_t kShortString = 15;  // libstdc++'s in-place capacity

size_t BlockOf(const std::string& s) {
  return s.capacity() > kShortString ? s.capacity() + 1 + kMallocHeader : 0;
}

size_t Footprint(const std::string& id, const std::string& record) {
  return kNodeBytes + BlockOf(id) + BlockOf(record);
}

}  // namespace

std::optional<std::string> RecordCache::Find(std::string_view id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = records_.find(id);
  if (it == records_.end()) {
    return std::nullopt;
  }
  return it->second;
}

void RecordCache::Update(
    std::vector<std::pair<std::string, std::optional<std::string>>>&& changes) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, record] : changes) {
    auto it = records_.find(id);
    if (it != records_.end()) {
      bytes_ -= Footprint(it->first, it->second);
      records_.erase(it);
    }
    if (!record) {
      continue;
    }
    if (record->capacity() > record->size() + 32) {
      record->shrink_to_fit();  // an encoder's reserve is a guess: up to twice the record
    }
    if (const size_t footprint = Footprint(id, *record); bytes_ + footprint <= max_bytes_) {
      bytes_ += footprint;
      records_.emplace(std::move(id), std::move(*record));
    }
  }
}

void RecordCache::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  records_.clear();
  bytes_ = 0;
}

size_t RecordCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

size_t RecordCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return records_.size();
}

}  // namespace egress::storage
