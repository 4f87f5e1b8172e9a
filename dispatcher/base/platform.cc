#include "dispatcher/base/platform.h"

#include "dispatcher/base/name_table.h"

namespace egress {
namespace {

NameTable<kMaxPlatforms>& Table() {
  static NameTable<kMaxPlatforms> table({"slack", "discord", "line", "webhook"});
  return table;
}

}  // namespace

Result<Platform> RegisterPlatform(std::string_view name) {
  if (std::optional<int> known = Table().Find(name)) {
    return static_cast<Platform>(*known);
  }
  if (!IsTableName(name, kMaxPlatformNameBytes)) {
    return Status::InvalidArgument(
        "a platform name is 1 to 32 of a-z, 0-9 and _, starting with a letter");
  }
  std::optional<int> added = Table().Add(name);
  if (!added) {
    return Status::FailedPrecondition("more than 32 platforms");
  }
  return static_cast<Platform>(*added);
}

int PlatformCount() { return Table().count(); }

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
  return Table().Name(static_cast<int>(platform));
}

std::optional<Platform> ParsePlatform(std::string_view name) {
  std::optional<int> found = Table().Find(name);
  return found ? std::optional<Platform>(static_cast<Platform>(*found)) : std::nullopt;
}

}  // namespace egress
