#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace egress {

// The platforms relay-egress delivers to. The order is the index of per-platform arrays
// (adapters::AdapterRegistry, metrics): a new platform goes at the end, with kPlatformCount and
// kPlatforms updated (CONTRIBUTING.md, "Adding a platform").
enum class Platform : uint8_t { kSlack, kDiscord, kLine, kWebhook };
inline constexpr int kPlatformCount = 4;

// Every platform, in enum order.
inline constexpr std::array<Platform, kPlatformCount> kPlatforms = {
    Platform::kSlack, Platform::kDiscord, Platform::kLine, Platform::kWebhook};

// "slack", "discord", "line", "webhook": the name in the API, the config and stored records.
std::string_view PlatformString(Platform platform);

// The inverse of PlatformString (exact, lowercase); nullopt for any other text.
std::optional<Platform> ParsePlatform(std::string_view name);

}  // namespace egress
