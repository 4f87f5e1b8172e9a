#pragma once

#include <array>
#include <memory>
#include <string_view>
#include <vector>

#include "adapters/discord_adapter.h"
#include "adapters/line_adapter.h"
#include "adapters/platform_adapter.h"
#include "adapters/profile_adapter.h"
#include "adapters/slack_adapter.h"
#include "adapters/webhook_adapter.h"
#include "dispatcher/base/platform.h"
#include "dispatcher/base/result.h"

namespace egress::adapters {

// The adapter of every platform this process delivers to, indexed by Platform: the four
// compiled-in ones and a ProfileAdapter for each profile platform. Immutable after
// construction: safe to read from any thread.
class AdapterRegistry {
 public:
  explicit AdapterRegistry(const PlatformEndpoints& endpoints,
                           std::vector<ProfileSpec> profiles = {});
  AdapterRegistry(const AdapterRegistry&) = delete;
  AdapterRegistry& operator=(const AdapterRegistry&) = delete;

  // The adapter of `platform`, or null when this registry has none.
  const PlatformAdapter* Get(Platform platform) const {
    return by_platform_[PlatformIndex(platform)];
  }

  // The adapter for a platform's name (exact, lowercase, as stored in Delivery::platform);
  // InvalidArgument naming any platform this registry has no adapter for.
  Result<const PlatformAdapter*> Find(std::string_view platform) const;

  // The platforms it has an adapter for, in number order.
  std::vector<Platform> platforms() const;

 private:
  SlackAdapter slack_;
  DiscordAdapter discord_;
  LineAdapter line_;
  WebhookAdapter webhook_;
  std::vector<std::unique_ptr<ProfileAdapter>> profiles_;
  std::array<const PlatformAdapter*, kMaxPlatforms> by_platform_{};
};

}  // namespace egress::adapters
