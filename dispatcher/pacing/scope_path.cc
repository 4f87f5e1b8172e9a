#include "dispatcher/pacing/scope_path.h"

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

Status AppendPlatformScopes(const DestinationSpec& spec, ScopePath& path) {
  const std::string_view cred = spec.credential;
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
      path.retry_after_index = 1;  // Slack's Retry-After covers (workspace, method).
      path.leaf_index = 2;
      return Status::Ok();
    case Platform::kLine: {
      const std::string_view endpoint =
          spec.endpoint.empty() ? std::string_view("POST /v2/bot/message/push") : spec.endpoint;
      Append(path, BudgetName::kLineChannel, HashScope(BudgetName::kLineChannel, {cred, endpoint}));
      path.credential_index = path.retry_after_index = path.leaf_index = 1;
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

ScopeKey DiscordBucketKey(ScopeKey credential_scope, std::string_view bucket) {
  return Finalize(HashScope(BudgetName::kDiscordRoute, {"bucket", bucket}) ^ credential_scope);
}

Result<ScopePath> BuildScopePath(const DestinationSpec& spec) {
  if (spec.tenant.empty() || spec.target.empty()) {
    return Status::InvalidArgument("destination needs a tenant and a target");
  }
  if (spec.platform != Platform::kWebhook && spec.credential.empty()) {
    return Status::InvalidArgument("destination needs a credential");
  }
  ScopePath path;
  Append(path, BudgetName::kTenantEgress, HashScope(BudgetName::kTenantEgress, {spec.tenant}));
  Status status = AppendPlatformScopes(spec, path);
  if (!status.ok()) {
    return status;
  }
  return path;
}

}  // namespace egress::pacing
