#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace egress {

// Names numbered in the order they came, at most N, never forgotten: the platforms and the
// budget names (dispatcher/base/platform.h, dispatcher/pacing/budget.h), the first ones compiled
// in, the others registered when a profile is loaded. Safe from any thread: a slot is written
// once, under the mutex, before the count is raised past it (release); readers look only below
// the count (acquire), so they never see a slot being written.
template <size_t N>
class NameTable {
 public:
  explicit NameTable(std::initializer_list<std::string_view> compiled_in) {
    size_t i = 0;
    for (std::string_view name : compiled_in) {
      names_[i++] = std::string(name);
    }
    count_.store(static_cast<int>(i), std::memory_order_release);
  }

  int count() const { return count_.load(std::memory_order_acquire); }

  // The name of number `i`; "unknown" for a number not given.
  std::string_view Name(int i) const {
    return i >= 0 && i < count() ? std::string_view(names_[i]) : std::string_view("unknown");
  }

  std::optional<int> Find(std::string_view name) const {
    const int count = this->count();
    for (int i = 0; i < count; ++i) {
      if (names_[i] == name) {
        return i;
      }
    }
    return std::nullopt;
  }

  // The number of `name`, the next one if it is new; nullopt when all N are taken. The caller
  // checks the name's form (IsTableName).
  std::optional<int> Add(std::string_view name) {
    if (std::optional<int> known = Find(name)) {
      return known;
    }
    std::lock_guard<std::mutex> lock(mu_);
    const int count = count_.load(std::memory_order_relaxed);
    for (int i = 0; i < count; ++i) {
      if (names_[i] == name) {
        return i;  // added by another thread meanwhile
      }
    }
    if (count >= static_cast<int>(N)) {
      return std::nullopt;
    }
    names_[count] = std::string(name);
    count_.store(count + 1, std::memory_order_release);
    return count;
  }

 private:
  std::mutex mu_;
  std::array<std::string, N> names_;
  std::atomic<int> count_{0};
};

// True for 1 to `max_bytes` of a-z, 0-9 and _, starting with a letter.
inline bool IsTableName(std::string_view name, size_t max_bytes) {
  if (name.empty() || name.size() > max_bytes || name[0] < 'a' || name[0] > 'z') {
    return false;
  }
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) {
      return false;
    }
  }
  return true;
}

}  // namespace egress
