#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "dispatcher/base/result.h"

namespace egress {

// A platform relay-egress delivers to, by its small number. The first four are compiled in, with
// code of their own (adapters/slack_adapter.h, ...); every other platform is described by a
// profile (docs/platforms.md, "Profile platforms") and registered by name when its profile is
// loaded (RegisterPlatform). The number indexes per-platform tables (kMaxPlatforms long); the
// name is what the API, the config, metrics and stored records use.
enum class Platform : uint8_t { kSlack, kDiscord, kLine, kWebhook };
inline constexpr int kBuiltinPlatformCount = 4;
// The most platforms one process knows: built-in and profile ones together.
inline constexpr int kMaxPlatforms = 32;

// The most bytes of a platform name; names are [a-z][a-z0-9_]* ("slack", "acme_chat").
inline constexpr size_t kMaxPlatformNameBytes = 32;

// The platform named `name`, registered if it is new: the same name always gets the same number
// within a process. Safe from any thread; names are never forgotten. InvalidArgument for a name
// that is not [a-z][a-z0-9_]* of at most kMaxPlatformNameBytes, FailedPrecondition past
// kMaxPlatforms platforms.
Result<Platform> RegisterPlatform(std::string_view name);

// The platforms registered so far (the built-in four first), in number order.
std::vector<Platform> Platforms();
// How many are registered: every Platform's number is below it.
int PlatformCount();

// "slack", "discord", "line", "webhook", or a profile platform's name: the name in the API, the
// config and stored records. "unknown" for a number never registered.
std::string_view PlatformString(Platform platform);

// The inverse of PlatformString (exact, lowercase); nullopt for a name never registered.
std::optional<Platform> ParsePlatform(std::string_view name);

// The index of `platform` in a per-platform table.
constexpr size_t PlatformIndex(Platform platform) { return static_cast<size_t>(platform); }

}  // namespace egress
