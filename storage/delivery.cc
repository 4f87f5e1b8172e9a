#include "storage/delivery.h"

namespace egress::storage {

std::string_view StateName(DeliveryState state) {
  switch (state) {
    case DeliveryState::kQueued:
      return "queued";
    case DeliveryState::kInFlight:
      return "in_flight";
    case DeliveryState::kDeferred:
      return "deferred";
    case DeliveryState::kDelivered:
      return "delivered";
    case DeliveryState::kDead:
      return "dead";
    case DeliveryState::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

std::optional<DeliveryState> ParseState(std::string_view name) {
  for (DeliveryState s : kAllStates) {
    if (StateName(s) == name) {
      return s;
    }
  }
  return std::nullopt;
}

bool IsTerminal(DeliveryState state) {
  return state == DeliveryState::kDelivered || state == DeliveryState::kDead ||
         state == DeliveryState::kCancelled;
}

bool IsWaiting(DeliveryState state) {
  return state == DeliveryState::kQueued || state == DeliveryState::kDeferred;
}

std::string DestinationKeyOf(std::string_view platform, std::string_view tenant,
                             std::string_view credential, std::string_view destination) {
  std::string key;
  key.reserve(platform.size() + tenant.size() + credential.size() + destination.size() + 3);
  key.append(platform).push_back('\x1f');
  key.append(tenant).push_back('\x1f');
  key.append(credential).push_back('\x1f');
  key.append(destination);
  return key;
}

bool SplitDestinationKey(std::string_view key, DestinationParts& parts) {
  std::string* fields[] = {&parts.platform, &parts.tenant, &parts.credential};
  for (std::string* field : fields) {
    const size_t sep = key.find('\x1f');
    if (sep == std::string_view::npos) {
      return false;
    }
    field->assign(key.substr(0, sep));
    key.remove_prefix(sep + 1);
  }
  parts.destination.assign(key);
  return true;
}

}  // namespace egress::storage
