#include "dispatcher/base/platform.h"

#include <atomic>
#include <mutex>
#include <string>

namespace egress {
namespace {

// The names by number. A slot is written once, under mu, before `count` is raised past it
// (release); readers look only below `count` (acquire), so they never see a slot being written.
struct Names {
  std::mutex mu;
  std::array<std::string, kMaxPlatforms> names;
  std::atomic<int> count{0};

  Names() {
    names[0] = "slack";
    names[1] = "discord";
    names[2] = "line";
    names[3] = "webhook";
    count.store(kBuiltinPlatformCount, std::memory_order_release);
  }
};

Names& Table() {
  static Names table;
  return table;
}

bool ValidName(std::string_view name) {
  if (name.empty() || name.size() > kMaxPlatformNameBytes || name[0] < 'a' || name[0] > 'z') {
    return false;
  }
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) {
      return false;
    }
  }
  return true;
}

}  // namespace

Result<Platform> RegisterPlatform(std::string_view name) {
  if (std::optional<Platform> known = ParsePlatform(name)) {
    return *known;
  }
  if (!ValidName(name)) {
    return Status::InvalidArgument(
        "a platform name is 1 to 32 of a-z, 0-9 and _, starting with a letter");
  }
  Names& table = Table();
  std::lock_guard<std::mutex> lock(table.mu);
  const int count = table.count.load(std::memory_order_relaxed);
  for (int i = 0; i < count; ++i) {
    if (table.names[i] == name) {
      return static_cast<Platform>(i);  // registered by another thread meanwhile
    }
  }
  if (count >= kMaxPlatforms) {
    return Status::FailedPrecondition("more than 32 platforms");
  }
  table.names[count] = std::string(name);
  table.count.store(count + 1, std::memory_order_release);
  return static_cast<Platform>(count);
}

int PlatformCount() { return Table().count.load(std::memory_order_acquire); }

std::vector<Platform> Platforms() {
  const int count = PlatformCount();
  std::vector<Platform> out;
  out.reserve(count);
  for (int i = 0; i < count; ++i) {
    out.push_back(static_cast<Platform>(i));
  }
  return out;
}

std::string_view PlatformString(Platform platform) {
  const int i = static_cast<int>(platform);
  if (i >= PlatformCount()) {
    return "unknown";
  }
  return Table().names[i];
}

std::optional<Platform> ParsePlatform(std::string_view name) {
  Names& table = Table();
  const int count = PlatformCount();
  for (int i = 0; i < count; ++i) {
    if (table.names[i] == name) {
      return static_cast<Platform>(i);
    }
  }
  return std::nullopt;
}

}  // namespace egress
