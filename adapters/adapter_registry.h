#pragma once

#include <string_view>

#include "adapters/discord_adapter.h"
#include "adapters/line_adapter.h"
#include "adapters/platform_adapter.h"
#include "adapters/slack_adapter.h"
#include "adapters/webhook_adapter.h"

namespace egress::adapters {

// The four platform adapters, built once from the endpoints. Immutable after construction; the
// pointers Find() returns live as long as the registry. Safe from any thread.
class AdapterRegistry {
 public:
  explicit AdapterRegistry(const PlatformEndpoints& endpoints);

  // The adapter for "slack", "discord", "line" or "webhook" (exact, lowercase, as stored in
  // Delivery::platform); InvalidArgument naming any other platform.
  Result<const PlatformAdapter*> Find(std::string_view platform) const;

 private:
  SlackAdapter slack_;
  DiscordAdapter discord_;
  LineAdapter line_;
  WebhookAdapter webhook_;
};

}  // namespace egress::adapters
