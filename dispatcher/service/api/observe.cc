// GET /v1/stats, /v1/destinations; POST /v1/destinations/enable.

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include "dispatcher/base/redact.h"
#include "dispatcher/service/api/destination_cursor.h"
#include "dispatcher/service/api/handlers.h"
#include "dispatcher/service/api/http.h"
#include "dispatcher/service/api/json_writer.h"
#include "dispatcher/service/service.h"

namespace egress::service {
namespace {

namespace asio = boost::asio;
using nlohmann::json;

json CountsJson(const storage::StateCounts& counts) {
  json j = json::object();
  for (auto state : storage::kAllStates) {
    j[std::string(storage::StateName(state))] = storage::CountOf(counts, state);
  }
  return j;
}

// Deliveries not yet finished: queued, in flight, deferred.
uint64_t BacklogOf(const storage::StateCounts& counts) {
  return storage::CountOf(counts, storage::DeliveryState::kQueued) +
         storage::CountOf(counts, storage::DeliveryState::kInFlight) +
         storage::CountOf(counts, storage::DeliveryState::kDeferred);
}

uint64_t BacklogOf(const std::vector<storage::GroupCounts>& groups) {
  uint64_t n = 0;
  for (const storage::GroupCounts& g : groups) {
    n += BacklogOf(g.counts);
  }
  return n;
}

// A tenant's backlog on a platform and the pace it has lately left at (this node's).
DrainInputs GroupDrain(Service& s, const storage::GroupCounts& g) {
  DrainInputs in;
  in.backlog = static_cast<int64_t>(BacklogOf(g.counts));
  in.seen_per_s = s.loop().DrainedPerSecond(g.tenant, g.platform);
  return in;
}

// A tenant's backlog by platform and when each would be done at the pace this node has seen it
// leave (docs/api.md, "Drain ETA"): {"<platform>": {"backlog", "drained_per_s"?,
// "drain_eta_ms"}}, for the platforms where it has a backlog.
json DrainJson(Service& s, const std::vector<storage::GroupCounts>& groups) {
  const int64_t now_ms = ToUnixMillis(s.clock().WallNow());
  json out = json::object();
  for (const storage::GroupCounts& g : groups) {
    const DrainInputs in = GroupDrain(s, g);
    json entry = {{"backlog", in.backlog}};
    if (in.seen_per_s) {
      entry["drained_per_s"] = std::round(*in.seen_per_s * 100) / 100;
    }
    const std::optional<int64_t> eta = DrainEtaMs(in, now_ms);
    entry["drain_eta_ms"] = eta ? json(*eta) : json(nullptr);
    out[g.platform] = std::move(entry);
  }
  return out;
}

// Every platform the node delivers to (compiled-in and profile ones), in number order.
json PlatformNames(const Service& s) {
  json names = json::array();
  for (Platform p : s.adapters().platforms()) {
    names.push_back(std::string(PlatformString(p)));
  }
  return names;
}

}  // namespace

void GetStats(Service& s, const TenantScope& scope, Respond respond) {
  if (scope) {
    // The store counts states for the whole service only; a tenant sees its own backlog and
    // destinations.
    const size_t destinations = s.loop().DestinationCountOf(*scope);
    OnStore(
        s,
        [tenant = *scope](storage::QueueStore& store) {
          return store.TenantBacklogByPlatform(tenant);
        },
        [&s, tenant = *scope, destinations, platforms = PlatformNames(s),
         respond = std::move(respond)](Result<std::vector<storage::GroupCounts>> groups) {
          if (!groups) {
            respond(ErrorResponse(FromStatus(groups.error())));
            return;
          }
          respond(JsonResponse(200, {{"tenant", tenant},
                                     {"backlog", BacklogOf(*groups)},
                                     {"destinations", destinations},
                                     {"platforms", platforms},
                                     {"drain", DrainJson(s, *groups)}}));
        });
    return;
  }
  asio::post(s.storage_pool(), [&s, respond = std::move(respond)]() mutable {
    auto counts = s.store().Counts();
    asio::post(s.io(), [&s, counts = std::move(counts), respond = std::move(respond)] {
      if (!counts) {
        respond(ErrorResponse(FromStatus(counts.error())));
        return;
      }
      for (auto state : storage::kAllStates) {
        s.metrics().Set(GaugeId::kQueueDepth, {{"state", std::string(storage::StateName(state))}},
                        static_cast<double>(storage::CountOf(*counts, state)));
      }
      json out = CountsJson(*counts);
      auto count = [&](CounterId m) { return static_cast<uint64_t>(s.metrics().Total(m)); };
      out["platform_429s"] = count(CounterId::kPlatform429);
      // By platform: what the console's overview charts, without a scrape of /metrics (which
      // grows with tenants: 9.5 MB at 10,000).
      json by_platform = json::object();
      for (Platform p : s.adapters().platforms()) {
        const std::string_view name = PlatformString(p);
        by_platform[std::string(name)] =
            static_cast<uint64_t>(s.metrics().Value(CounterId::kPlatform429, {{"platform", name}}));
      }
      out["platform_429s_by_platform"] = std::move(by_platform);
      // Every platform this node delivers to, compiled-in and profile ones, in number order.
      out["platforms"] = PlatformNames(s);
      out["throttles"] = count(CounterId::kThrottles);
      out["deferrals"] = count(CounterId::kDeferrals);
      // By reason and by outcome, what `relay-egress top` shows, so that it need not read the
      // whole /metrics text (9.5 MB at 10,000 tenants) a second: sums kept as they change.
      auto sums = [&](CounterId m) {
        json by = json::object();
        for (const auto& [value, sum] : s.metrics().TotalsBy(m)) {
          by[value] = static_cast<uint64_t>(sum);
        }
        return by;
      };
      out["deferrals_by_reason"] = sums(CounterId::kDeferrals);
      out["attempts_by_outcome"] = sums(CounterId::kDeliveries);
      out["accepted"] = count(CounterId::kDeliveriesAccepted);
      out["intake_rejections"] = count(CounterId::kIntakeRejections);
      out["destinations"] = s.loop().destination_count();
      respond(JsonResponse(200, out));
    });
  });
}

namespace {

// One destination of a page, as GET /v1/destinations shows it, written as JSON text.
void WriteDestination(JsonWriter& j, const DestinationInfo& d, const std::string& key,
                      const storage::StateCounts& counts, std::optional<int64_t> group_eta_ms,
                      SteadyTime now, int64_t now_ms) {
  j.BeginObject();
  j.Key("platform").String(d.platform);
  j.Key("tenant").String(d.tenant);
  j.Key("credential").String(d.credential);
  j.Key("destination").String(RedactDestination(d.destination));
  j.Key("key").String(DestinationKeyText(key));
  j.Key("queued").Uint(storage::CountOf(counts, storage::DeliveryState::kQueued));
  j.Key("deferred").Uint(storage::CountOf(counts, storage::DeliveryState::kDeferred));
  j.Key("has_head").Bool(d.view.has_head);
  if (d.view.has_head) {
    j.Key("head_priority").String(pacing::PriorityName(d.view.head_priority));
  }
  j.Key("in_flight").Int(d.view.in_flight);
  j.Key("disabled").Bool(d.view.disabled);
  j.Key("paused").Bool(!d.pause_id.empty());
  j.Key("budget").BeginObject();
  j.Key("name").String(pacing::BudgetNameString(d.view.budget_name));
  j.Key("limit").Int(d.view.budget.limit);
  j.Key("scale_ms").Int(d.view.budget.scale_ms);
  j.Key("burst").Int(d.view.budget.burst);
  j.Key("learned").Bool(d.view.budget_learned);
  j.EndObject();
  j.Key("remaining").Int(d.view.remaining);
  if (d.view.adaptive) {
    // Header-less 429s hold the destination below its budget (adaptive pace).
    j.Key("adaptive").BeginObject();
    j.Key("limit").Int(d.view.adaptive->limit);
    j.Key("scale_ms").Int(d.view.adaptive->scale_ms);
    j.Key("burst").Int(d.view.adaptive->burst);
    j.Key("probing").Bool(d.view.adaptive_probing);
    j.EndObject();
  }
  if (d.view.origin_capacity > 0) {
    // The connections of the origin it sends to, shared with every destination there: requests
    // on them, the most they carry, and requests leased and waiting for one.
    j.Key("connections").BeginObject();
    j.Key("in_flight").Int(d.view.origin_in_flight);
    j.Key("capacity").Int(d.view.origin_capacity);
    j.Key("waiting").Int(d.view.origin_waiting);
    j.Key("kept").Int(d.view.origin_kept);
    j.EndObject();
  }
  if (d.view.disabled) {
    j.Key("disabled_reason").String(d.view.disabled_reason);
  }
  if (!d.pause_id.empty()) {
    j.Key("pause_id").String(d.pause_id);  // GET /api/admin/pauses shows the pause
  }
  if (d.shadow_checked > 0) {
    // Its tenant's shadow limits: dispatches metered, and those they would have throttled.
    j.Key("shadow").BeginObject();
    j.Key("checked").Uint(d.shadow_checked);
    j.Key("throttled").Uint(d.shadow_throttled);
    j.EndObject();
  }
  if (d.view.deferral.reason != pacing::DeferReason::kNone) {
    j.Key("deferral").String(d.view.deferral.ToString());
  }
  // The head may go now unless the Scheduler holds it until a time.
  int64_t eligible_ms = now_ms;
  if (d.view.deferral.until) {
    eligible_ms += std::max<int64_t>(
        0, std::chrono::duration_cast<Millis>(*d.view.deferral.until - now).count());
  }
  if (d.view.has_head) {
    j.Key("next_eligible_ms").Int(eligible_ms);
  }
  // When its backlog would be done (docs/api.md, "Drain ETA").
  DrainInputs drain;
  drain.backlog = std::max<int64_t>(static_cast<int64_t>(BacklogOf(counts)), d.view.in_flight);
  drain.seen_per_s = d.drained_per_s;
  drain.foreseen_per_s = d.view.foreseen_per_s;
  drain.not_before_ms = eligible_ms;
  drain.held = d.view.disabled || d.view.paused || !d.pause_id.empty();
  drain.group_eta_ms = group_eta_ms;
  if (d.drained_per_s) {
    j.Key("drained_per_s").Double(*d.drained_per_s);
  }
  if (std::optional<int64_t> eta = DrainEtaMs(drain, now_ms)) {
    j.Key("drain_eta_ms").Int(*eta);
  } else {
    j.Key("drain_eta_ms").Null();
  }
  if (d.oldest_deferral_ms != 0) {
    j.Key("oldest_deferral_ms").Int(d.oldest_deferral_ms);
    j.Key("oldest_deferral_age_ms").Int(std::max<int64_t>(0, now_ms - d.oldest_deferral_ms));
  }
  // The platform's last rate-limit headers, by name; a name given twice shows its last value.
  std::vector<const std::pair<std::string, std::string>*> headers;
  headers.reserve(d.last_headers.size());
  for (const auto& h : d.last_headers) {
    headers.push_back(&h);
  }
  std::stable_sort(headers.begin(), headers.end(),
                   [](const auto* a, const auto* b) { return a->first < b->first; });
  j.Key("last_headers").BeginObject();
  for (size_t i = 0; i < headers.size(); ++i) {
    if (i + 1 < headers.size() && headers[i + 1]->first == headers[i]->first) {
      continue;
    }
    j.Key(headers[i]->first).String(headers[i]->second);
  }
  j.EndObject();
  if (d.last_response_ms != 0) {
    j.Key("last_response_ms").Int(d.last_response_ms);
  }
  j.EndObject();
}

// GET /v1/destinations' query: filters, sort, limit and cursor, checked; a typed 400 naming the
// parameter otherwise.
std::optional<ApiError> ReadDestinationQuery(Service& s,
                                             const std::map<std::string, std::string>& q,
                                             const TenantScope& scope, DestinationQuery& out) {
  auto get = [&](const char* key) {
    auto it = q.find(key);
    return it == q.end() ? std::string() : it->second;
  };
  out.tenant = get("tenant");
  if (auto forbidden = ConfineTenantFilter(scope, "tenant", out.tenant)) {
    return forbidden;
  }
  if (scope) {
    out.tenant = *scope;  // a tenant's key lists its own only
  }
  out.platform = get("platform");
  out.destination_prefix = get("destination");
  out.deferral_prefix = get("deferral");
  const size_t max = s.options().store.max_field_bytes;
  for (auto [name, value] : {std::pair{"tenant", &out.tenant}, std::pair{"platform", &out.platform},
                             std::pair{"destination", &out.destination_prefix},
                             std::pair{"deferral", &out.deferral_prefix}}) {
    if (auto bad = CheckRequestText(name, *value, max)) {
      return bad;
    }
  }
  if (auto bad = CheckPlatformFilter("platform", out.platform)) {
    return bad;
  }
  if (const std::string disabled = get("disabled"); !disabled.empty()) {
    if (disabled != "true" && disabled != "false") {
      return ApiError{400, "invalid_request", "disabled: true or false", "disabled"};
    }
    out.disabled = disabled == "true";
  }
  if (const std::string sort = get("sort"); !sort.empty()) {
    if (sort != "key" && sort != "oldest_deferral") {
      return ApiError{400, "invalid_request", "sort: key or oldest_deferral", "sort"};
    }
    out.by_oldest_deferral = sort == "oldest_deferral";
  }
  if (const std::string limit = get("limit"); !limit.empty()) {
    int n = 0;
    auto [p, ec] = std::from_chars(limit.data(), limit.data() + limit.size(), n);
    if (ec != std::errc() || p != limit.data() + limit.size() || n < 1 || n > 1000) {
      return ApiError{400, "invalid_request", "limit: an integer from 1 to 1000", "limit"};
    }
    out.limit = static_cast<size_t>(n);
  }
  if (const std::string cursor = get("cursor"); !cursor.empty()) {
    if (cursor.size() > 16 + 2 * max + 64) {
      return ApiError{400, "invalid_cursor", "cursor: not a cursor of GET /v1/destinations",
                      "cursor"};
    }
    auto at = DecodeDestinationCursor(cursor, s.loop().destination_epoch(), out.by_oldest_deferral);
    if (!at) {
      return ApiError{400, "invalid_cursor", at.error().message(), "cursor"};
    }
    if (scope && at->tenant != *scope) {
      return ApiError{400, "invalid_cursor", "cursor: made for another listing", "cursor"};
    }
    out.after = std::move(*at);
  }
  return std::nullopt;
}

}  // namespace

namespace {

// Only so many listings are on their way at once (Service::kMaxListings).
HttpResponse TooManyListings() {
  HttpResponse busy =
      JsonResponse(429, {{"error", "too_many_listings"},
                         {"message", fmt::format("{} listings of destinations are being answered; "
                                                 "retry in a moment",
                                                 Service::kMaxListings)},
                         {"retry_after_ms", 1000}});
  busy.set("Retry-After", "1");
  return busy;
}

// A listing of GET /v1/destinations on its way: its page is made in steps of kListingStep
// destinations, each listed on the loop, counted on the storage pool and written as JSON text
// on the loop, each step posted after the one before, so that intake, deliveries and other calls
// go between them (a page of 1,000 made at once held the loop ~10 ms, and its 1,000 counts the
// store's one thread as long: another tenant's p99 went from 12 ms to 70 ms while a client
// walked 100,000). Memory is bounded by the page: its text and one step's destinations.
struct Listing {
  DestinationQuery query;  // `after` moves on step by step
  size_t limit = 0;
  size_t scanned = 0;
  size_t listed = 0;
  std::optional<DestinationPosition> next;
  std::string text;  // the answer so far
  JsonWriter json{text};
  Respond respond;
  // The backlogs of the groups (tenant, platform) of the tenants read so far (CountAndWrite):
  // one TenantBacklogByPlatform per tenant per page.
  std::set<std::string> group_tenants;
  std::map<std::pair<std::string, std::string>, storage::GroupCounts> groups;
};
constexpr size_t kListingStep = 100;
constexpr size_t kListingMaxScan = 10'000;

void PageStep(Service& s, std::shared_ptr<Listing> l);

void Finish(Service& s, Listing& l, HttpResponse res) {
  --s.listings_in_flight();
  l.respond(std::move(res));
}

bool PageDone(const Listing& l) {
  return !l.next || l.listed >= l.limit || l.scanned >= kListingMaxScan;
}

void Answer(Service& s, Listing& l) {
  l.json.EndArray().Key("next_cursor");
  if (l.next) {
    l.json.String(
        EncodeDestinationCursor(s.loop().destination_epoch(), l.query.by_oldest_deferral, *l.next));
  } else {
    l.json.Null();
  }
  l.json.EndObject();
  Finish(s, l, TextResponse(200, std::move(l.text), "application/json"));
}

// What a step reads from the store: its destinations' counts, and the backlogs by platform of
// the tenants whose destinations share their key with others, not read yet in this page (their
// estimates are held to their group's, WriteDestination).
struct StepCounts {
  Result<std::vector<storage::StateCounts>> counts;
  std::vector<std::string> tenants;  // whose groups were read (or failed to be)
  std::vector<storage::GroupCounts> groups;
};
// Tenants whose groups a page reads, at most: one TenantBacklogByPlatform each (RocksDB copies
// the tenant's group sums; PostgreSQL runs a sum per platform and waiting state over the
// tenant's counter rows and reads this node's leases under their lock), so a page of 1,000
// over many tenants costs no more than one over eight. Destinations of further tenants keep
// their own estimate.
constexpr size_t kGroupTenantsPerPage = 8;

// The step's destinations, listed on the loop a moment ago: their counts read on the storage
// pool, then written on the loop.
void CountAndWrite(Service& s, std::shared_ptr<Listing> l, DestinationPage page) {
  std::vector<std::string> keys;
  keys.reserve(page.items.size());
  std::set<std::string> group_tenants;
  for (const DestinationInfo& d : page.items) {
    keys.push_back(storage::DestinationKeyOf(d.platform, d.tenant, d.credential, d.destination));
    if (d.view.key_shared && !l->group_tenants.contains(d.tenant) &&
        l->group_tenants.size() + group_tenants.size() < kGroupTenantsPerPage) {
      group_tenants.insert(d.tenant);
    }
  }
  auto shared_keys = std::make_shared<const std::vector<std::string>>(std::move(keys));
  OnStore(
      s,
      [shared_keys, group_tenants = std::move(group_tenants)](storage::QueueStore& store) {
        StepCounts out{store.DestinationCounts(*shared_keys), {}, {}};
        if (!out.counts) {
          return out;
        }
        // A tenant whose groups cannot be read keeps its destinations' own estimates.
        for (const std::string& tenant : group_tenants) {
          out.tenants.push_back(tenant);
          if (auto groups = store.TenantBacklogByPlatform(tenant)) {
            for (storage::GroupCounts& g : *groups) {
              out.groups.push_back(std::move(g));
            }
          }
        }
        return out;
      },
      [&s, l = std::move(l), keys = shared_keys, page = std::move(page)](StepCounts step) mutable {
        Result<std::vector<storage::StateCounts>>& counts = step.counts;
        if (!counts) {
          Finish(s, *l, ErrorResponse(FromStatus(counts.error())));
          return;
        }
        if (counts->size() != page.items.size()) {
          // The cursor has moved past them: a page without some would skip them for good.
          Finish(s, *l,
                 ErrorResponse(ApiError{500, "internal",
                                        fmt::format("the store counted {} of {} destinations",
                                                    counts->size(), page.items.size())}));
          return;
        }
        const SteadyTime now = s.clock().Now();
        const int64_t now_ms = ToUnixMillis(s.clock().WallNow());
        l->group_tenants.insert(step.tenants.begin(), step.tenants.end());
        for (storage::GroupCounts& g : step.groups) {
          std::pair<std::string, std::string> group{g.tenant, g.platform};
          l->groups[std::move(group)] = std::move(g);
        }
        for (size_t i = 0; i < page.items.size(); ++i) {
          const DestinationInfo& d = page.items[i];
          std::optional<int64_t> group_eta;
          if (d.view.key_shared) {
            if (auto it = l->groups.find({d.tenant, d.platform}); it != l->groups.end()) {
              // At most the pace its own key foresees: the group may hold faster keys, and a
              // limit lowered now shows in the key's pace before the group's seen one.
              DrainInputs group = GroupDrain(s, it->second);
              group.foreseen_per_s = d.view.foreseen_per_s;
              group_eta = DrainEtaMs(group, now_ms);
            }
          }
          WriteDestination(l->json, d, (*keys)[i], (*counts)[i], group_eta, now, now_ms);
        }
        if (PageDone(*l)) {
          Answer(s, *l);
          return;
        }
        asio::post(s.io(), [&s, l = std::move(l)]() mutable { PageStep(s, std::move(l)); });
      });
}

// Lists the next step of the page on the loop; then its counts.
void PageStep(Service& s, std::shared_ptr<Listing> l) {
  DestinationQuery step = l->query;
  step.limit = std::min(kListingStep, l->limit - l->listed);
  step.max_scan = std::min(kListingStep * 10, kListingMaxScan - l->scanned);
  DestinationPage page = s.loop().ListDestinations(step);
  l->listed += page.items.size();
  l->scanned += page.scanned;
  l->next = page.next;
  l->query.after = page.next;
  if (page.items.empty()) {
    if (PageDone(*l)) {
      Answer(s, *l);
    } else {
      asio::post(s.io(), [&s, l = std::move(l)]() mutable { PageStep(s, std::move(l)); });
    }
    return;
  }
  CountAndWrite(s, std::move(l), std::move(page));
}

}  // namespace

void GetDestinations(Service& s, const std::map<std::string, std::string>& q,
                     const TenantScope& scope, Respond respond) {
  auto l = std::make_shared<Listing>();
  if (auto bad = ReadDestinationQuery(s, q, scope, l->query)) {
    respond(ErrorResponse(*bad));
    return;
  }
  // Only so many listings are on their way at once.
  if (s.listings_in_flight() >= Service::kMaxListings) {
    respond(TooManyListings());
    return;
  }
  ++s.listings_in_flight();
  l->limit = l->query.limit;
  l->respond = std::move(respond);
  l->json.BeginObject().Key("destinations").BeginArray();
  PageStep(s, std::move(l));
}

namespace {

// POST /v1/destinations/enable by the key as GET /v1/destinations shows it: the caller's
// destinations (a tenant key's own; the tenant the shown key names, when one has destinations)
// are looked at kEnableStep at a time on the loop, each step posted after the one before, as a
// listing is (it takes one of the listings' slots). The key must name exactly one.
struct EnableSearch {
  std::string shown;
  std::string tenant;  // empty: every tenant
  std::optional<DestinationPosition> after;
  std::vector<std::string> matches;
  Respond respond;
};
constexpr size_t kEnableStep = 2000;

void EnableAnswer(Service& s, EnableSearch& e, bool enabled, const std::string& key) {
  --s.listings_in_flight();
  if (!enabled) {
    e.respond(ErrorResponse({404, "not_found", "no destination with work has that key", "key"}));
    return;
  }
  e.respond(JsonResponse(200, {{"key", DestinationKeyText(key)}, {"enabled", true}}));
}

void EnableStep(Service& s, std::shared_ptr<EnableSearch> e) {
  DeliveryLoop::ShownKeyMatches found =
      s.loop().FindByShownKey(e->shown, e->tenant, e->after, kEnableStep);
  for (std::string& key : found.keys) {
    e->matches.push_back(std::move(key));
  }
  if (found.next && e->matches.size() < 2) {
    e->after = std::move(found.next);
    asio::post(s.io(), [&s, e = std::move(e)]() mutable { EnableStep(s, std::move(e)); });
    return;
  }
  const bool one = e->matches.size() == 1;
  EnableAnswer(s, *e, one && s.loop().Enable(e->matches[0]), one ? e->matches[0] : "");
}

}  // namespace

void EnableDestination(Service& s, const HttpRequest& request, const TenantScope& scope,
                       Respond respond) {
  auto body = ParseJsonBody(request);
  if (!body || !body->is_object() || !body->contains("key") || !(*body)["key"].is_string()) {
    respond(ErrorResponse({400, "invalid_request", "key: required, a destination key", "key"}));
    return;
  }
  // The key as stored, or as GET /v1/destinations shows it (separators as '/', secrets as "…"):
  // then it must name exactly one of the caller's destinations. Another tenant's destination is
  // as unknown as one without work.
  const std::string given = (*body)["key"];
  storage::DestinationParts parts;
  if (storage::SplitDestinationKey(given, parts) && (!scope || parts.tenant == *scope) &&
      s.loop().Enable(given)) {
    respond(JsonResponse(200, {{"key", DestinationKeyText(given)}, {"enabled", true}}));
    return;
  }
  if (s.listings_in_flight() >= Service::kMaxListings) {
    respond(TooManyListings());
    return;
  }
  ++s.listings_in_flight();
  auto e = std::make_shared<EnableSearch>();
  e->shown = DestinationKeyText(given);
  e->respond = std::move(respond);
  if (scope) {
    e->tenant = *scope;
  } else if (const size_t a = e->shown.find('/'); a != std::string::npos) {
    // "platform/tenant/...": the tenant's range alone when it has destinations (a tenant whose
    // name holds a '/' is looked for among every tenant's).
    const size_t b = e->shown.find('/', a + 1);
    std::string tenant = e->shown.substr(a + 1, b == std::string::npos ? b : b - a - 1);
    if (s.loop().DestinationCountOf(tenant) > 0) {
      e->tenant = std::move(tenant);
    }
  }
  EnableStep(s, std::move(e));
}

}  // namespace egress::service
