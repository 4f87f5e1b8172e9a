#include "dispatcher/pacing/priority.h"

namespace egress::pacing {

std::string_view PriorityName(Priority priority) {
  switch (priority) {
    case Priority::kHigh:
      return "high";
    case Priority::kNormal:
      return "normal";
    case Priority::kBulk:
      return "bulk";
  }
  return "normal";
}

std::optional<Priority> ParsePriority(std::string_view name) {
  for (int i = 0; i < kPriorityCount; ++i) {
    const auto priority = static_cast<Priority>(i);
    if (name == PriorityName(priority)) {
      return priority;
    }
  }
  return std::nullopt;
}

}  // namespace egress::pacing
