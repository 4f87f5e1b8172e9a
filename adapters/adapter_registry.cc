#include "adapters/adapter_registry.h"

#include <string>

#include "adapters/attempt_reports.h"

namespace egress::adapters {

AdapterRegistry::AdapterRegistry(const PlatformEndpoints& endpoints)
    : slack_(endpoints), discord_(endpoints), line_(endpoints), webhook_(endpoints) {}

Result<const PlatformAdapter*> AdapterRegistry::Find(std::string_view platform) const {
  if (platform == "slack") {
    return &slack_;
  }
  if (platform == "discord") {
    return &discord_;
  }
  if (platform == "line") {
    return &line_;
  }
  if (platform == "webhook") {
    return &webhook_;
  }
  return Status::InvalidArgument("unknown platform '" + Printable(platform, 64) + "'");
}

}  // namespace egress::adapters
