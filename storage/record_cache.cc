#include "storage/record_cache.h"

namespace egress::storage {

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
      bytes_ -= it->first.size() + it->second.size();
      records_.erase(it);
    }
    if (record && bytes_ + id.size() + record->size() <= max_bytes_) {
      bytes_ += id.size() + record->size();
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
