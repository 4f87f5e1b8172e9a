#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "dispatcher/base/platform.h"
#include "dispatcher/base/result.h"
#include "dispatcher/pacing/budget.h"
#include "dispatcher/pacing/budget_store.h"
#include "dispatcher/pacing/platform_scopes.h"

namespace egress::pacing {

// Where deliveries go, as the service knows it. Strings are only read while the path is built.
struct DestinationSpec {
  std::string tenant;
  Platform platform = Platform::kWebhook;
  // A stable identity of the credential, e.g. "tenant/name" or a hash of the token; never the
  // secret itself. Keys the token-wide scopes (Discord global, Slack workspace, LINE channel).
  std::string credential;
  // Slack channel id or incoming-webhook URL; Discord `channels/<id>` or `webhooks/<id>/<token>`;
  // LINE user/group/room id; webhook absolute URL.
  std::string target;
  // Discord only: the route template, e.g. "POST /channels/:id/messages". Default: derived from
  // `target`.
  std::string route;
  // LINE only: the endpoint, e.g. "POST /v2/bot/message/push". Default: push.
  std::string endpoint;
  // The "scheme://host:port" its requests go to, as the transport keys connections; deliveries
  // to one origin share its connections (SchedulerOptions::connections). Empty: no connection
  // limit applies.
  std::string origin;
};

// The scope keys of a destination, outermost first (tenant egress first, the destination's own
// key last). Every delivery passes all of them, all or nothing. Six: tenant_egress and up to
// five of a profile platform's (an app and four windows per conversation).
inline constexpr size_t kMaxScopes = 6;
struct ScopePath {
  std::array<BudgetName, kMaxScopes> budgets{};
  std::array<ScopeKey, kMaxScopes> keys{};
  uint8_t size = 0;
  // Which scope a token-wide (Discord global) 429 parks, which one an ordinary Retry-After
  // parks, and the destination's own key (remaining == 0, learned limits and buckets).
  uint8_t credential_index = 0;
  uint8_t retry_after_index = 0;
  uint8_t leaf_index = 0;
  // The leaf's burst is a property of the platform, the same for every destination under the
  // credential scope (its siblings): a burst one sibling learns holds for all, and only one
  // sibling at a time tries a burst no sibling has had accepted (docs/pacing.md, "Siblings").
  bool shared_shape = false;
  // A Retry-After parks only the leaf while the retry_after_index scope's meter has room: the
  // leaf's own limit refused it, not the wider one (docs/platforms.md, Slack).
  bool park_leaf_with_room = false;
  // The platform states no limit (LINE): until the leaf's first 429, at most one request more
  // than its accepted ones is in flight (docs/pacing.md, "Startup window").
  bool startup_window = false;
  // Discord only: the hashes the leaf key is made of, so that a learned bucket can re-key it.
  ScopeKey discord_route = 0;
  ScopeKey discord_major = 0;
};

// The key of the siblings of a leaf: the leaves of budget `leaf_budget` under the credential
// scope `credential_scope`.
ScopeKey SiblingGroupKey(ScopeKey credential_scope, BudgetName leaf_budget);

// The path for a destination:
//   discord: tenant_egress(tenant) > discord_global(credential) > discord_route(credential,
//            bucket-or-route, major parameter);
//   slack:   tenant_egress(tenant) > slack_workspace(credential) > slack_channel(credential,
//            channel), the channels' burst shared, a 429 parking the channel while the
//            workspace has room;
//   line:    tenant_egress(tenant) > line_channel(credential, endpoint);
//   webhook: tenant_egress(tenant) > webhook_destination(tenant, URL);
//   a profile platform: tenant_egress(tenant) > each of `profile`'s rules that applies, keyed by
//            its parts. Its credential scope (a token-wide 429) is the first rule keyed by the
//            credential alone, else the last; its Retry-After parks the rule marked `park`,
//            else the last, which is also the destination's own key.
// kInvalidArgument for an empty tenant, credential (except webhooks) or target, a Discord
// target that is neither `channels/<id>` nor `webhooks/<id>/<token>`, or a profile platform
// without rules (or with more than kMaxScopes - 1 that apply).
Result<ScopePath> BuildScopePath(const DestinationSpec& spec,
                                 const PlatformScopes& profile = PlatformScopes{});

// The 64-bit key of a scope identity: FNV-1a over the parts with separators, then a 64-bit
// finalizer (splitmix64). Deterministic across processes and builds.
ScopeKey HashScope(BudgetName budget, std::initializer_list<std::string_view> parts);

// The Discord leaf key for a bucket (or route) hash and a major-parameter hash.
ScopeKey DiscordLeafKey(ScopeKey bucket_or_route, ScopeKey major);

// The hash a learned Discord bucket id is keyed by, per credential (its discord_global key).
ScopeKey DiscordBucketKey(ScopeKey credential_scope, std::string_view bucket);

}  // namespace egress::pacing
