#include "dispatcher/pacing/scope_path.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

namespace egress::pacing {
namespace {

constexpr uint64_t kFnvOffset = 1469598103934665603ULL;
constexpr uint64_t kFnvPrime = 1099511628211ULL;

uint64_t Fnv(uint64_t h, std::string_view text) {
  for (unsigned char c : text) {
    h = (h ^ c) * kFnvPrime;
  }
  return h;
}

uint64_t Finalize(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void Append(ScopePath& path, BudgetName budget, ScopeKey key) {
  path.budgets[path.size] = budget;
  path.keys[path.size] = key;
  ++path.size;
}

// `channels/<id>` → ("POST /channels/:id/messages", "channels/<id>"); webhooks likewise.
Result<std::pair<std::string, std::string>> DiscordRoute(std::string_view target) {
  if (target.starts_with("channels/") && target.size() > 9 &&
      target.find('/', 9) == std::string_view::npos) {
    return std::pair<std::string, std::string>("POST /channels/:id/messages", std::string(target));
  }
  if (target.starts_with("webhooks/")) {
    const size_t slash = target.find('/', 9);
    if (slash != std::string_view::npos && slash > 9 && slash + 1 < target.size()) {
      return std::pair<std::string, std::string>("POST /webhooks/:id/:token", std::string(target));
    }
  }
  return Status::InvalidArgument("discord target must be channels/<id> or webhooks/<id>/<token>");
}

std::string_view KeyPart(const DestinationSpec& spec, ScopeKeyPart part) {
  switch (part) {
    case ScopeKeyPart::kTenant:
      return spec.tenant;
    case ScopeKeyPart::kCredential:
      return spec.credential;
    case ScopeKeyPart::kDestination:
      return spec.target;
  }
  return {};
}

ScopeKey ProfileScopeKey(const DestinationSpec& spec, const ScopeRule& rule) {
  // FNV-1a as HashScope, over the parts the rule names (at most three).
  std::array<std::string_view, 3> parts{};
  const size_t n = std::min(rule.key.size(), parts.size());
  for (size_t i = 0; i < n; ++i) {
    parts[i] = KeyPart(spec, rule.key[i]);
  }
  switch (n) {
    case 1:
      return HashScope(rule.budget, {parts[0]});
    case 2:
      return HashScope(rule.budget, {parts[0], parts[1]});
    case 3:
      return HashScope(rule.budget, {parts[0], parts[1], parts[2]});
    default:
      return HashScope(rule.budget, {});
  }
}

Status AppendProfileScopes(const DestinationSpec& spec, const PlatformScopes& profile,
                           ScopePath& path) {
  std::optional<uint8_t> credential;
  std::optional<uint8_t> park;
  for (const ScopeRule& rule : profile.rules) {
    if (!std::string_view(spec.target).starts_with(rule.when_destination_starts_with)) {
      continue;
    }
    if (path.size >= kMaxScopes) {
      return Status::InvalidArgument("more scopes apply than a path holds");
    }
    if (!credential && rule.key.size() == 1 && rule.key[0] == ScopeKeyPart::kCredential) {
      credential = path.size;
    }
    if (rule.park) {
      park = path.size;
    }
    Append(path, rule.budget, ProfileScopeKey(spec, rule));
  }
  if (path.size < 2) {
    return Status::InvalidArgument(fmt::format("platform {} has no scope for this destination",
                                               PlatformString(spec.platform)));
  }
  path.leaf_index = static_cast<uint8_t>(path.size - 1);
  path.credential_index = credential.value_or(path.leaf_index);
  path.retry_after_index = park.value_or(path.leaf_index);
  return Status::Ok();
}

Status AppendPlatformScopes(const DestinationSpec& spec, const PlatformScopes& profile,
                            ScopePath& path) {
  const std::string_view cred = spec.credential;
  if (static_cast<int>(spec.platform) >= kBuiltinPlatformCount) {
    return AppendProfileScopes(spec, profile, path);
  }
  switch (spec.platform) {
    case Platform::kDiscord: {
      Result<std::pair<std::string, std::string>> route = DiscordRoute(spec.target);
      if (!route.has_value()) {
        return route.error();
      }
      const std::string& template_route = spec.route.empty() ? route->first : spec.route;
      path.discord_route = HashScope(BudgetName::kDiscordRoute, {cred, template_route});
      path.discord_major = HashScope(BudgetName::kDiscordRoute, {route->second});
      Append(path, BudgetName::kDiscordGlobal, HashScope(BudgetName::kDiscordGlobal, {cred}));
      Append(path, BudgetName::kDiscordRoute,
             DiscordLeafKey(path.discord_route, path.discord_major));
      path.credential_index = 1;
      path.retry_after_index = 2;
      path.leaf_index = 2;
      return Status::Ok();
    }
    case Platform::kSlack:
      Append(path, BudgetName::kSlackWorkspace, HashScope(BudgetName::kSlackWorkspace, {cred}));
      Append(path, BudgetName::kSlackChannel,
             HashScope(BudgetName::kSlackChannel, {cred, spec.target}));
      path.credential_index = 1;
      // Slack's Retry-After covers (workspace, method) [SL1], but chat.postMessage's own limit
      // is per channel [SL2]: a 429 while our workspace meter has room is the channel's.
      path.retry_after_index = 1;
      path.park_leaf_with_room = true;
      path.leaf_index = 2;
      // "Short bursts" per channel [SL1]: one size for every channel of a workspace.
      path.shared_shape = true;
      return Status::Ok();
    case Platform::kLine: {
      const std::string_view endpoint =
          spec.endpoint.empty() ? std::string_view("POST /v2/bot/message/push") : spec.endpoint;
      Append(path, BudgetName::kLineChannel, HashScope(BudgetName::kLineChannel, {cred, endpoint}));
      path.credential_index = path.retry_after_index = path.leaf_index = 1;
      path.startup_window = true;  // LINE states no limit in its answers [L1]
      return Status::Ok();
    }
    case Platform::kWebhook:
      Append(path, BudgetName::kWebhookDestination,
             HashScope(BudgetName::kWebhookDestination, {spec.tenant, spec.target}));
      path.credential_index = path.retry_after_index = path.leaf_index = 1;
      return Status::Ok();
  }
  return Status::InvalidArgument("unknown platform");
}

}  // namespace

ScopeKey HashScope(BudgetName budget, std::initializer_list<std::string_view> parts) {
  uint64_t h = Fnv(kFnvOffset, BudgetNameString(budget));
  for (std::string_view part : parts) {
    h = Fnv(h, "\x1f");
    h = Fnv(h, part);
  }
  return Finalize(h);
}

ScopeKey DiscordLeafKey(ScopeKey bucket_or_route, ScopeKey major) {
  return Finalize(bucket_or_route ^ Finalize(major + 0x9e3779b97f4a7c15ULL));
}

ScopeKey SiblingGroupKey(ScopeKey credential_scope, BudgetName leaf_budget) {
  return Finalize(HashScope(leaf_budget, {"siblings"}) ^ Finalize(credential_scope + 1));
}

ScopeKey DiscordBucketKey(ScopeKey credential_scope, std::string_view bucket) {
  return Finalize(HashScope(BudgetName::kDiscordRoute, {"bucket", bucket}) ^ credential_scope);
}

Result<ScopePath> BuildScopePath(const DestinationSpec& spec, const PlatformScopes& profile) {
  if (spec.tenant.empty() || spec.target.empty()) {
    return Status::InvalidArgument("destination needs a tenant and a target");
  }
  if (spec.platform != Platform::kWebhook && spec.credential.empty()) {
    return Status::InvalidArgument("destination needs a credential");
  }
  ScopePath path;
  Append(path, BudgetName::kTenantEgress, HashScope(BudgetName::kTenantEgress, {spec.tenant}));
  Status status = AppendPlatformScopes(spec, profile, path);
  if (!status.ok()) {
    return status;
  }
  return path;
}

}  // namespace egress::pacing
