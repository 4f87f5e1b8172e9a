#include "adapters/adapter_registry.h"

#include <string>

#include "adapters/attempt_reports.h"
#include "dispatcher/base/check.h"

namespace egress::adapters {

AdapterRegistry::AdapterRegistry(const PlatformEndpoints& endpoints)
    : slack_(endpoints), discord_(endpoints), line_(endpoints), webhook_(endpoints) {
  for (const PlatformAdapter* adapter :
       std::initializer_list<const PlatformAdapter*>{&slack_, &discord_, &line_, &webhook_}) {
    by_platform_[static_cast<size_t>(adapter->platform())] = adapter;
  }
  for (const PlatformAdapter* adapter : by_platform_) {
    EGRESS_CHECK(adapter != nullptr);  // every Platform has its adapter
  }
}

Result<const PlatformAdapter*> AdapterRegistry::Find(std::string_view platform) const {
  std::optional<Platform> parsed = ParsePlatform(platform);
  if (!parsed) {
    return Status::InvalidArgument("unknown platform '" + Printable(platform, 64) + "'");
  }
  return &Get(*parsed);
}

}  // namespace egress::adapters
