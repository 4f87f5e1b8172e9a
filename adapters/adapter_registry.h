#pragma once

#include <array>
#include <string_view>

#include "adapters/discord_adapter.h"
#include "adapters/line_adapter.h"
#include "adapters/platform_adapter.h"
#include "adapters/slack_adapter.h"
#include "adapters/webhook_adapter.h"
#include "dispatcher/base/platform.h"
#include "dispatcher/base/result.h"

namespace egress::adapters {

// The adapter of every platform, indexed by Platform. Immutable after construction: safe to
// read from any thread.
class AdapterRegistry {
 public:
  explicit AdapterRegistry(const PlatformEndpoints& endpoints);
  AdapterRegistry(const AdapterRegistry&) = delete;
  AdapterRegistry& operator=(const AdapterRegistry&) = delete;

  const PlatformAdapter& Get(Platform platform) const {
    return *by_platform_[static_cast<size_t>(platform)];
  }

  // The adapter for "slack", "discord", "line" or "webhook" (exact, lowercase, as stored in
  // Delivery::platform); InvalidArgument naming any other platform.
  Result<const PlatformAdapter*> Find(std::string_view platform) const;

 private:
  SlackAdapter slack_;
  DiscordAdapter discord_;
  LineAdapter line_;
  WebhookAdapter webhook_;
  std::array<const PlatformAdapter*, kPlatformCount> by_platform_;
};

}  // namespace egress::adapters
