#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace egress::pacing {

// How urgent a delivery is among the others under a scope they share (docs/pacing.md,
// "Priority"): under a tenant's egress budget, a Slack workspace, a Discord token's global
// limit, ready `high` heads go before `normal` ones, `normal` before `bulk`; `bulk` may be held
// to a share of each shared scope. Within one destination deliveries leave in intake order
// whatever their priority. Values are persisted (storage's record tag and lanes by index):
// never renumber.
enum class Priority : uint8_t {
  kHigh = 0,
  kNormal = 1,
  kBulk = 2,
};
inline constexpr int kPriorityCount = 3;

inline constexpr int PriorityIndex(Priority priority) { return static_cast<int>(priority); }
// The wait lane of `priority`: its index, a value out of range (a corrupt record's, a cast)
// held to the nearest lane.
inline constexpr int PriorityLane(Priority priority) {
  const int index = PriorityIndex(priority);
  return index < 0 ? 0 : index >= kPriorityCount ? kPriorityCount - 1 : index;
}

// "high", "normal", "bulk": the names in the API, metrics and the CLI.
std::string_view PriorityName(Priority priority);
// The priority named `name`; nullopt for any other text.
std::optional<Priority> ParsePriority(std::string_view name);

}  // namespace egress::pacing
