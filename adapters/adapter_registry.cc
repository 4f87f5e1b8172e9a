#include "adapters/adapter_registry.h"

#include <string>

#include "adapters/attempt_reports.h"
#include "dispatcher/base/check.h"

namespace egress::adapters {

AdapterRegistry::AdapterRegistry(const PlatformEndpoints& endpoints,
                                 std::vector<ProfileSpec> profiles)
    : slack_(endpoints), discord_(endpoints), line_(endpoints), webhook_(endpoints) {
  for (const PlatformAdapter* adapter :
       std::initializer_list<const PlatformAdapter*>{&slack_, &discord_, &line_, &webhook_}) {
    by_platform_[PlatformIndex(adapter->platform())] = adapter;
  }
  for (ProfileSpec& spec : profiles) {
    // A profile platform never takes a compiled-in one's place (the loader refuses that).
    EGRESS_CHECK(static_cast<int>(spec.platform) >= kBuiltinPlatformCount);
    profiles_.push_back(std::make_unique<ProfileAdapter>(std::move(spec)));
    by_platform_[PlatformIndex(profiles_.back()->platform())] = profiles_.back().get();
  }
}

Result<const PlatformAdapter*> AdapterRegistry::Find(std::string_view platform) const {
  std::optional<Platform> parsed = ParsePlatform(platform);
  if (!parsed || by_platform_[PlatformIndex(*parsed)] == nullptr) {
    return Status::InvalidArgument("unknown platform '" + Printable(platform, 64) + "'");
  }
  return by_platform_[PlatformIndex(*parsed)];
}

std::vector<Platform> AdapterRegistry::platforms() const {
  std::vector<Platform> out;
  for (size_t i = 0; i < by_platform_.size(); ++i) {
    if (by_platform_[i] != nullptr) {
      out.push_back(static_cast<Platform>(i));
    }
  }
  return out;
}

}  // namespace egress::adapters
