#include "dispatcher/base/platform.h"

namespace egress {

std::string_view PlatformString(Platform platform) {
  switch (platform) {
    case Platform::kSlack:
      return "slack";
    case Platform::kDiscord:
      return "discord";
    case Platform::kLine:
      return "line";
    case Platform::kWebhook:
      return "webhook";
  }
  return "unknown";
}

std::optional<Platform> ParsePlatform(std::string_view name) {
  for (Platform p : kPlatforms) {
    if (PlatformString(p) == name) {
      return p;
    }
  }
  return std::nullopt;
}

}  // namespace egress
