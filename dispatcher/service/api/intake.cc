// Intake: POST /v1/deliveries and POST /v1/deliveries/batch, each read -> check -> meter ->
// enqueue -> answer, in this file (the reading and checking of one delivery's fields is in
// delivery_fields.cc). Runs on the loop, except the store work OnStore hands to the pool.

#include "dispatcher/service/api/intake.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/duration.h"
#include "config/server_options.h"
#include "dispatcher/base/traceparent.h"
#include "dispatcher/service/api/delivery_fields.h"
#include "dispatcher/service/api/handlers.h"
#include "dispatcher/service/api/http.h"
#include "dispatcher/service/api/intake_limiter.h"
#include "dispatcher/service/api/json_writer.h"
#include "dispatcher/service/credential_book.h"
#include "dispatcher/service/service.h"
#include "storage/delivery_codec.h"
#include "storage/state_machine.h"

namespace egress::service {
namespace {

using nlohmann::json;

// ---- Shared by both routes ----

// The body of a 429 of the backpressure contract (docs/api.md): the error, its message, when to
// retry, and the error's own `fields`.
json TooManyBody(std::string_view error, std::string message, int64_t retry_ms,
                 json fields = json::object()) {
  json body = {{"error", error}, {"message", std::move(message)}, {"retry_after_ms", retry_ms}};
  body.update(fields);
  return body;
}

// A 429 of the backpressure contract: TooManyBody with Retry-After (whole seconds, rounded up).
// Callers add their rate-limit headers.
HttpResponse TooMany(std::string_view error, std::string message, int64_t retry_ms,
                     json fields = json::object()) {
  HttpResponse res =
      JsonResponse(429, TooManyBody(error, std::move(message), retry_ms, std::move(fields)));
  res.set("Retry-After", std::to_string((retry_ms + 999) / 1000));
  return res;
}

// A batch item's 429, as the batch answer lists it: TooManyBody with "status".
std::string TooManyItem(std::string_view error, std::string message, int64_t retry_ms,
                        json fields = json::object()) {
  json body = TooManyBody(error, std::move(message), retry_ms, std::move(fields));
  body["status"] = 429;
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

// The 429 of the backpressure contract, with every header.
HttpResponse Throttled(const IntakeLimiter::Decision& d, WallTime now, std::string_view why) {
  const int64_t retry_ms = std::max<int64_t>(1, d.retry_after.count());
  const int64_t reset_s = (d.reset_after.count() + 999) / 1000;
  const int64_t window_s = std::max<int64_t>(1, (d.budget.scale_ms + 999) / 1000);
  HttpResponse res =
      TooMany("rate_limited", fmt::format("tenant is over its {}; retry later", why), retry_ms);
  res.set("X-RateLimit-Limit", std::to_string(d.budget.limit));
  res.set("X-RateLimit-Remaining", std::to_string(d.remaining));
  res.set("X-RateLimit-Reset",
          std::to_string(
              std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count() +
              reset_s));
  res.set("RateLimit-Policy", fmt::format("\"tenant_intake\";q={};w={}", d.budget.limit, window_s));
  res.set("RateLimit", fmt::format("\"tenant_intake\";r={};t={}", d.remaining, reset_s));
  return res;
}

// The answer's fields of a quota refusal: the quota, and when enough units leave its window for
// the request to fit (a request over the whole limit never fits: the window, and says so).
struct QuotaRetry {
  int64_t retry_ms;
  bool never;
};
QuotaRetry RetryOf(const QuotaBook::Denial& d) {
  const bool never = d.decision.retry_after_ms < 0;
  return {never ? d.quota.config.window.count() : std::max<int64_t>(1, d.decision.retry_after_ms),
          never};
}

std::string QuotaMessage(const QuotaBook::Denial& d, bool never) {
  return never ? fmt::format(
                     "the delivery's units are more than quota {}'s limit of {}: it "
                     "never fits",
                     d.quota.name, d.quota.config.limit)
               : fmt::format("tenant is over its quota {} ({} units per {}); retry later",
                             d.quota.name, d.quota.config.limit,
                             config::FormatDuration(d.quota.config.window));
}

// 429 quota_exceeded (docs/api.md, "Quotas") with Retry-After and the rate-limit headers of the
// quota (RateLimit-Policy's w: the window in seconds).
HttpResponse QuotaExceeded(const QuotaBook::Denial& d, WallTime now) {
  const auto [retry_ms, never] = RetryOf(d);
  const int64_t reset_s = (d.decision.reset_after_ms + 999) / 1000;
  const int64_t window_s = (d.quota.config.window.count() + 999) / 1000;
  const int64_t remaining = std::max<int64_t>(0, d.quota.config.limit - d.decision.used);
  HttpResponse res =
      TooMany("quota_exceeded", QuotaMessage(d, never), retry_ms, {{"quota", d.quota.name}});
  res.set("X-RateLimit-Limit", std::to_string(d.quota.config.limit));
  res.set("X-RateLimit-Remaining", std::to_string(remaining));
  res.set("X-RateLimit-Reset",
          std::to_string(
              std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count() +
              reset_s));
  res.set("RateLimit-Policy",
          fmt::format("\"{}\";q={};w={}", d.quota.name, d.quota.config.limit, window_s));
  res.set("RateLimit", fmt::format("\"{}\";r={};t={}", d.quota.name, remaining, reset_s));
  return res;
}

// A batch item's quota refusal, as the batch answer lists it.
std::string QuotaRefusalText(const QuotaBook::Denial& d) {
  const auto [retry_ms, never] = RetryOf(d);
  return TooManyItem("quota_exceeded", QuotaMessage(d, never), retry_ms, {{"quota", d.quota.name}});
}

void CountQuotaRejection(Service& s, const std::string& tenant, const QuotaBook::Denial& d) {
  s.metrics().Inc(CounterId::kIntakeRejections, {{"tenant", tenant}, {"reason", "quota_exceeded"}});
  s.metrics().Inc(CounterId::kQuotaRejections, {{"tenant", tenant}, {"quota", d.quota.name}});
}

// Shadow quotas an accepted item would have been refused by (QuotaBook::Charge).
void CountShadowQuotaRejections(Service& s, const std::string& tenant,
                                const std::vector<std::string>& quotas) {
  for (const std::string& quota : quotas) {
    s.metrics().Inc(CounterId::kQuotaShadowRejections, {{"tenant", tenant}, {"quota", quota}});
  }
}

// A tenant at its cap of requests in flight (TenantRequestSlots).
HttpResponse TooManyInFlight(size_t cap) {
  return TooMany("rate_limited",
                 fmt::format("tenant has {} intake requests waiting for their write; retry when "
                             "some are answered",
                             cap),
                 1000);
}

// A tenant's bound of stored bytes ([tenants.<t>] max_stored_bytes, else
// server.tenant_max_stored_bytes); 0: none.
uint64_t StoredBytesBound(const ServiceOptions& options, const std::string& tenant) {
  auto it = options.tenant_max_stored_bytes.find(tenant);
  return it != options.tenant_max_stored_bytes.end() ? it->second : options.max_stored_bytes;
}

// Why a tenant is refused for its stored bytes: what it has stored and its bound. Retry after
// StorageRetryMs: the next retention pass is the soonest its finished records can go.
struct StorageRefusal {
  uint64_t stored = 0;
  uint64_t bound = 0;
};
std::string StorageMessage(const StorageRefusal& r) {
  return fmt::format(
      "tenant's deliveries take {} bytes in the store, its bound is {}; retry once retention "
      "has removed finished ones",
      r.stored, r.bound);
}
int64_t StorageRetryMs(const ServiceOptions& options) {
  return std::max<int64_t>(1000, options.retention.interval.count());
}
json StorageFields(const StorageRefusal& r) {
  return {{"stored_bytes", r.stored}, {"max_stored_bytes", r.bound}};
}

// The most bytes `parts` add to the store (EnqueuedBytesBound of each).
// Each with room for the history its attempts will add (storage::kMaxHistoryBytes, and the
// newest attempt beyond it): what the record may grow to after intake, so that a tenant's stored
// bytes stay under twice its bound however its receivers answer.
uint64_t IncomingBytes(std::span<const storage::NewDelivery> parts) {
  uint64_t n = 0;
  for (const storage::NewDelivery& part : parts) {
    n += storage::EnqueuedBytesBound(part) + 2 * storage::kMaxHistoryBytes;
  }
  return n;
}

// Whether `incoming` bytes fit under `bound` (0: no bound) over the `stored` ones.
bool FitsStorage(uint64_t stored, uint64_t incoming, uint64_t bound) {
  return bound == 0 || (stored < bound && incoming <= bound - stored);
}

// The store's refusal; a 503 carries Retry-After, and has the store's health looked at now (a
// failed write is how a full disk shows first).
HttpResponse Unavailable(Service& s, const Status& st) {
  HttpResponse res = ErrorResponse(FromStatus(st));
  if (res.result_int() == 503) {
    res.set("Retry-After", "1");
    s.store_health().Check();
  }
  return res;
}

// The delivery just stored from `in` under `id`, as the delivery loop is told of it.
storage::Delivery Queued(storage::NewDelivery in, const std::string& id, int64_t now_ms) {
  storage::Delivery d;
  d.id = id;
  d.tenant = std::move(in.tenant);
  d.platform = std::move(in.platform);
  d.destination = std::move(in.destination);
  d.credential = std::move(in.credential);
  d.created_ms = now_ms;
  d.updated_ms = now_ms;
  d.next_attempt_ms = now_ms;
  d.cost = in.cost;
  d.priority = in.priority;
  d.ordering_key = std::move(in.ordering_key);
  d.traceparent = std::move(in.traceparent);
  return d;
}

// The platforms of the credentials one request names, looked up once per (tenant, name) among
// the last few pairs: a batch names few, and the book takes a lock and copies secrets.
class CredentialPlatforms {
 public:
  explicit CredentialPlatforms(const CredentialBook& book) : book_(book) {}

  // The platform of the tenant's credential `name`; nullopt when it is not registered.
  const std::optional<std::string>& Find(const std::string& tenant, const std::string& name);

 private:
  static constexpr size_t kRemembered = 8;
  struct Entry {
    std::string tenant, name;
    std::optional<std::string> platform;
  };
  const CredentialBook& book_;
  std::vector<Entry> recent_;
  size_t next_ = 0;
};

const std::optional<std::string>& CredentialPlatforms::Find(const std::string& tenant,
                                                            const std::string& name) {
  for (const Entry& e : recent_) {
    if (e.tenant == tenant && e.name == name) {
      return e.platform;
    }
  }
  auto cred = book_.Find(tenant, name);
  Entry& e = recent_.size() < kRemembered ? recent_.emplace_back() : recent_[next_++ % kRemembered];
  e.tenant = tenant;
  e.name = name;
  e.platform = cred ? std::optional<std::string>(std::move(cred->platform)) : std::nullopt;
  return e.platform;
}

// Checks one item: shape (CheckDeliveryFields), then the tenant's credential.
tl::expected<storage::NewDelivery, ApiError> CheckItem(Service& s, DeliveryFields&& fields,
                                                       CredentialPlatforms& credentials) {
  auto parsed = CheckDeliveryFields(std::move(fields), s.options().intake, s.adapters());
  if (!parsed) {
    return parsed;
  }
  const std::optional<std::string>& platform = credentials.Find(parsed->tenant, parsed->credential);
  if (!platform) {
    return tl::unexpected(ApiError{422, "unknown_credential",
                                   fmt::format("credential: '{}' is not registered for tenant '{}'",
                                               parsed->credential, parsed->tenant),
                                   "credential"});
  }
  if (*platform != parsed->platform) {
    return tl::unexpected(ApiError{422, "credential_platform_mismatch",
                                   fmt::format("credential: '{}' is a {} credential, not {}",
                                               parsed->credential, *platform, parsed->platform),
                                   "credential"});
  }
  return parsed;
}

// Confines one request's fields to `scope`: a missing (or null) tenant becomes the scope's; a
// tenant that is another is 403 forbidden. A tenant of the wrong type is left for
// CheckDeliveryFields to refuse (400).
std::optional<ApiError> ApplyScope(DeliveryFields& fields, const TenantScope& scope) {
  if (!scope) {
    return std::nullopt;
  }
  RequestField& tenant = fields.tenant;
  if (tenant.kind == RequestField::Kind::kAbsent || tenant.kind == RequestField::Kind::kNull) {
    tenant.kind = RequestField::Kind::kString;
    tenant.text = *scope;
    return std::nullopt;
  }
  if (tenant.kind == RequestField::Kind::kString && tenant.text != *scope) {
    return ApiError{403, "forbidden", "tenant: this API key acts for its own tenant only",
                    "tenant"};
  }
  return std::nullopt;
}

// ---- POST /v1/deliveries ----

struct EnqueueOutcome {
  // One result per part (a LINE multicast over 500 recipients is several deliveries).
  Result<std::vector<Result<storage::EnqueueResult>>> results = Status::Unavailable("not run");
  bool over_backlog = false;
  std::optional<StorageRefusal> over_storage;
  std::string state;  // the first part's state when it was already stored
};

// Stores the parts of one request in one synced write (unless the tenant is over its backlog,
// or its stored bytes would pass `storage_bound`).
EnqueueOutcome EnqueueParts(storage::QueueStore& store,
                            const std::vector<storage::NewDelivery>& parts, int64_t now_ms,
                            uint64_t watermark, uint64_t storage_bound) {
  EnqueueOutcome out;
  auto backlog = store.TenantBacklog(parts.front().tenant);
  if (backlog && *backlog >= watermark) {
    out.over_backlog = true;
    return out;
  }
  if (storage_bound > 0) {
    // A store that cannot say lets the parts through: the write meets the same fault.
    auto stored = store.TenantStoredBytes(parts.front().tenant);
    if (stored && !FitsStorage(*stored, IncomingBytes(parts), storage_bound)) {
      out.over_storage = StorageRefusal{*stored, storage_bound};
      return out;
    }
  }
  if (parts.size() == 1) {
    Result<storage::EnqueueResult> one = store.Enqueue(parts.front(), now_ms);
    if (!one) {
      out.results = one.error();
      return out;
    }
    out.results = std::vector<Result<storage::EnqueueResult>>{std::move(one)};
  } else {
    out.results = store.EnqueueBatch(parts, now_ms);
  }
  if (out.results) {
    const auto& first = out.results->front();
    if (first && !first->created) {
      auto existing = store.Get(first->id);
      out.state = existing ? std::string(storage::StateName(existing->state)) : "queued";
    }
  }
  return out;
}

// The answer to POST /v1/deliveries once its parts are stored: 202 when any part is new, 200
// when every part was already stored under its idempotency key; a split request also lists
// every part's id in "ids".
HttpResponse Accepted(Service& s, const std::vector<storage::NewDelivery>& parts,
                      const std::vector<Result<storage::EnqueueResult>>& results, int64_t now_ms,
                      const std::string& state) {
  json ids = json::array();
  bool created = false;
  for (size_t k = 0; k < results.size(); ++k) {
    if (!results[k]) {
      // A part the store refused (the others are stored and go out).
      return ErrorResponse(FromStatus(results[k].error()));
    }
    ids.push_back(results[k]->id);
    if (results[k]->created) {
      created = true;
      s.metrics().Inc(CounterId::kDeliveriesAccepted,
                      {{"tenant", parts[k].tenant}, {"platform", parts[k].platform}});
      s.loop().Notify(Queued(parts[k], results[k]->id, now_ms));
    }
  }
  json body = {{"id", ids.front()}, {"state", created ? std::string("queued") : state}};
  if (parts.size() > 1) {
    body["ids"] = std::move(ids);
  }
  return JsonResponse(created ? 202 : 200, body);
}

// ---- POST /v1/deliveries/batch ----

// An item's refusal as the batch answer lists it: the envelope plus "status".
std::string RefusalText(const ApiError& e) {
  json j = e.ToJson();
  j["status"] = e.http_status;
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Moves the parts of the items whose tenant was denied out of the write, refusing those items.
void DropDenied(const std::map<std::string, IntakeLimiter::Decision>& denied,
                std::vector<storage::NewDelivery>& pending, std::vector<size_t>& slots,
                std::vector<std::string>& refused) {
  size_t kept = 0;
  for (size_t k = 0; k < pending.size(); ++k) {
    if (auto it = denied.find(pending[k].tenant); it != denied.end()) {
      refused[slots[k]] =
          json{{"error", "rate_limited"},
               {"status", 429},
               {"retry_after_ms", std::max<int64_t>(1, it->second.retry_after.count())}}
              .dump();
      continue;
    }
    if (kept != k) {
      pending[kept] = std::move(pending[k]);
      slots[kept] = slots[k];
    }
    ++kept;
  }
  pending.resize(kept);
  slots.resize(kept);
}

// A batch on its way to the store: its parts (`slots[k]` names the item of `pending[k]`), the
// refusals so far by item, the tenants refused for their backlog and for their stored bytes with
// their part counts, and the bounds of stored bytes of its tenants that have one.
struct BatchWrite {
  std::vector<storage::NewDelivery> pending;
  std::vector<size_t> slots;
  std::vector<std::string> refused;
  std::map<std::string, int64_t> over_backlog;
  std::map<std::string, int64_t> over_storage;
  std::map<std::string, uint64_t> storage_bounds;
  int64_t storage_retry_ms = 1000;
};

// On the storage pool: refuses, item by item in order, those whose parts would take their
// tenant's stored bytes past its bound (429 storage_quota_exceeded, as a single intake); the
// items before them that fit count towards it.
void DropOverStorage(storage::QueueStore& store, BatchWrite& write) {
  std::map<std::string, std::optional<uint64_t>> stored;  // by tenant, with the items kept
  size_t kept = 0;
  for (size_t k = 0; k < write.pending.size();) {
    size_t end = k + 1;
    while (end < write.pending.size() && write.slots[end] == write.slots[k]) {
      ++end;  // the item's other parts (one tenant)
    }
    const std::string tenant = write.pending[k].tenant;
    const auto bound = write.storage_bounds.find(tenant);
    bool fits = true;
    if (bound != write.storage_bounds.end()) {
      auto it = stored.find(tenant);
      if (it == stored.end()) {
        auto n = store.TenantStoredBytes(tenant);  // an error lets the items through
        it = stored.emplace(tenant, n ? std::optional<uint64_t>(*n) : std::nullopt).first;
      }
      const uint64_t incoming = IncomingBytes(std::span(write.pending).subspan(k, end - k));
      if (it->second && !FitsStorage(*it->second, incoming, bound->second)) {
        fits = false;
        const StorageRefusal r{*it->second, bound->second};
        write.refused[write.slots[k]] = TooManyItem("storage_quota_exceeded", StorageMessage(r),
                                                    write.storage_retry_ms, StorageFields(r));
        write.over_storage[tenant] += static_cast<int64_t>(end - k);
      } else if (it->second) {
        *it->second += incoming;
      }
    }
    for (; k < end; ++k) {
      if (fits) {
        if (kept != k) {
          write.pending[kept] = std::move(write.pending[k]);
          write.slots[kept] = write.slots[k];
        }
        ++kept;
      }
    }
  }
  write.pending.resize(kept);
  write.slots.resize(kept);
}

// On the storage pool: refuses the items of every tenant at or over its backlog watermark (429
// rate_limited, retry in 1 s, as a single intake) and those over their tenant's bound of stored
// bytes (DropOverStorage), then writes the rest in one synced batch.
Result<std::vector<Result<storage::EnqueueResult>>> WriteBatch(storage::QueueStore& store,
                                                               BatchWrite& write, int64_t now_ms,
                                                               uint64_t watermark) {
  std::map<std::string, IntakeLimiter::Decision> full;
  std::set<std::string_view> checked;
  for (const storage::NewDelivery& part : write.pending) {
    if (!checked.insert(part.tenant).second) {
      continue;
    }
    auto backlog = store.TenantBacklog(part.tenant);
    if (backlog && *backlog >= watermark) {
      IntakeLimiter::Decision d;
      d.retry_after = Millis(1000);
      full.emplace(part.tenant, d);
    }
  }
  if (!full.empty()) {
    for (const storage::NewDelivery& part : write.pending) {
      if (full.contains(part.tenant)) {
        ++write.over_backlog[part.tenant];
      }
    }
    DropDenied(full, write.pending, write.slots, write.refused);
  }
  if (!write.storage_bounds.empty()) {
    DropOverStorage(store, write);
  }
  if (write.pending.empty()) {
    return std::vector<Result<storage::EnqueueResult>>{};
  }
  return store.EnqueueBatch(write.pending, now_ms);
}

// The answer to a batch once its parts are written (`stored[k]` for `parts[k]`, of item
// `slots[k]`): 202 when every item is accepted, else 207; each result as nlohmann would dump
// it (keys sorted), written without a tree. Counts and queues the parts that are new.
HttpResponse BatchAnswer(Service& s, std::vector<storage::NewDelivery>&& parts,
                         const std::vector<size_t>& slots,
                         const std::vector<Result<storage::EnqueueResult>>& stored,
                         const std::vector<std::string>& refused, int64_t now_ms) {
  // New parts per (tenant, platform), counted once per pair.
  std::vector<std::pair<storage::NewDelivery*, int64_t>> accepted;
  for (size_t k = 0; k < parts.size(); ++k) {
    if (!stored[k] || !stored[k]->created) {
      continue;
    }
    auto same = std::find_if(accepted.begin(), accepted.end(), [&](const auto& a) {
      return a.first->tenant == parts[k].tenant && a.first->platform == parts[k].platform;
    });
    if (same != accepted.end()) {
      ++same->second;
    } else {
      accepted.emplace_back(&parts[k], 1);
    }
  }
  for (const auto& [part, n] : accepted) {
    s.metrics().Inc(CounterId::kDeliveriesAccepted,
                    {{"tenant", part->tenant}, {"platform", part->platform}},
                    static_cast<double>(n));
  }
  std::string body = R"({"results":[)";
  body.reserve(body.size() + refused.size() * 80);
  bool all_ok = true;
  size_t k = 0;
  for (size_t i = 0; i < refused.size(); ++i) {
    if (i > 0) {
      body += ',';
    }
    if (!refused[i].empty()) {
      body += refused[i];
      all_ok = false;
      continue;
    }
    // The item's parts: its answer is the last refused part's error, else every id.
    const size_t first = k;
    const Status* failed = nullptr;
    bool created = false;
    for (; k < slots.size() && slots[k] == i; ++k) {
      if (!stored[k]) {
        failed = &stored[k].error();
        continue;
      }
      if (stored[k]->created) {
        created = true;
        s.loop().Notify(Queued(std::move(parts[k]), stored[k]->id, now_ms));
      }
    }
    if (failed != nullptr) {
      body += RefusalText(FromStatus(*failed));
      all_ok = false;
      continue;
    }
    body += created ? R"({"created":true,"id":)" : R"({"created":false,"id":)";
    AppendJsonString(body, stored[first]->id);
    if (k - first > 1) {
      body += R"(,"ids":[)";
      for (size_t p = first; p < k; ++p) {
        if (p > first) {
          body += ',';
        }
        AppendJsonString(body, stored[p]->id);
      }
      body += ']';
    }
    body += R"(,"state":"queued"})";
  }
  body += "]}";
  return TextResponse(all_ok ? 202 : 207, std::move(body), "application/json");
}

// The request's W3C `traceparent` header as stored (version 00), empty when there is none; 400
// invalid_request naming it when it is malformed or repeated. Applies to every delivery of the
// request.
tl::expected<std::string, ApiError> RequestTraceparent(const HttpRequest& request) {
  auto it = request.find("traceparent");
  if (it == request.end()) {
    return std::string();
  }
  if (request.count("traceparent") > 1) {
    return tl::unexpected(
        ApiError{400, "invalid_request", "traceparent: given more than once", "traceparent"});
  }
  std::optional<std::string> normal =
      NormalizeTraceparent(std::string_view(it->value().data(), it->value().size()));
  if (!normal) {
    return tl::unexpected(ApiError{
        400, "invalid_request",
        "traceparent: not a W3C traceparent (<version>-<32 hex>-<16 hex>-<2 hex>)", "traceparent"});
  }
  return std::move(*normal);
}

}  // namespace

void CreateDelivery(Service& s, const HttpRequest& request, const TenantScope& scope,
                    Respond respond) {
  auto traceparent = RequestTraceparent(request);
  if (!traceparent) {
    s.metrics().Inc(CounterId::kIntakeRejections,
                    {{"tenant", scope.value_or("")}, {"reason", "invalid"}});
    respond(ErrorResponse(traceparent.error()));
    return;
  }
  auto fields = ReadDeliveryBody(request.body());
  if (!fields) {
    s.metrics().Inc(CounterId::kIntakeRejections,
                    {{"tenant", scope.value_or("")}, {"reason", "invalid"}});
    respond(ErrorResponse(fields.error()));
    return;
  }
  if (fields->is_object) {
    if (auto forbidden = ApplyScope(*fields, scope)) {
      s.metrics().Inc(CounterId::kIntakeRejections, {{"tenant", *scope}, {"reason", "forbidden"}});
      respond(ErrorResponse(*forbidden));
      return;
    }
  }
  // A refused request's tenant is what the client wrote: a label only when the deployment knows
  // the tenant, so clients cannot grow the metric's series without bound.
  const std::string tenant_label = fields->tenant.kind != RequestField::Kind::kString ? ""
                                   : s.credentials().HasTenant(fields->tenant.text)
                                       ? fields->tenant.text
                                       : "_unknown";
  CredentialPlatforms credentials(s.credentials());
  auto item = CheckItem(s, std::move(*fields), credentials);
  auto parts =
      item
          ? SplitDelivery(std::move(*item))
          : tl::expected<std::vector<storage::NewDelivery>, ApiError>(tl::unexpected(item.error()));
  if (!parts) {
    s.metrics().Inc(CounterId::kIntakeRejections,
                    {{"tenant", tenant_label}, {"reason", parts.error().code}});
    respond(ErrorResponse(parts.error()));
    return;
  }
  for (storage::NewDelivery& part : *parts) {
    part.traceparent = *traceparent;
  }
  const std::string tenant = parts->front().tenant;
  auto decision = s.intake_limiter().Take(tenant, static_cast<int64_t>(parts->size()));
  if (!decision.allowed) {
    s.metrics().Inc(CounterId::kIntakeRejections, {{"tenant", tenant}, {"reason", "rate_limited"}});
    respond(Throttled(decision, s.clock().WallNow(), "intake budget"));
    return;
  }
  std::shared_ptr<void> slot = s.request_slots().TryTake(tenant);
  if (!slot) {
    s.metrics().Inc(CounterId::kIntakeRejections, {{"tenant", tenant}, {"reason", "in_flight"}});
    respond(TooManyInFlight(s.request_slots().per_tenant()));
    return;
  }
  // The estimate: each part's cost, charged to every quota of the tenant that applies, with the
  // write (the store counts it; the reservation covers the time until the write is done).
  QuotaBook::Reservation reserved;
  std::vector<std::string> shadow_refused;
  if (auto denial = s.quotas().Charge(*parts, reserved, &shadow_refused)) {
    CountQuotaRejection(s, tenant, *denial);
    respond(QuotaExceeded(*denial, s.clock().WallNow()));
    return;
  }
  CountShadowQuotaRejections(s, tenant, shadow_refused);
  const int64_t now_ms = ToUnixMillis(s.clock().WallNow());
  const uint64_t watermark = s.options().backlog_watermark;
  const uint64_t storage_bound = StoredBytesBound(s.options(), tenant);
  auto shared = std::make_shared<const std::vector<storage::NewDelivery>>(std::move(*parts));
  OnStore(
      s,
      [shared, now_ms, watermark, storage_bound](storage::QueueStore& store) {
        return EnqueueParts(store, *shared, now_ms, watermark, storage_bound);
      },
      [&s, shared, now_ms, decision, slot = std::move(slot), reserved = std::move(reserved),
       respond = std::move(respond)](EnqueueOutcome out) {
        s.quotas().Release(reserved);
        if (out.over_backlog) {
          s.metrics().Inc(CounterId::kIntakeRejections,
                          {{"tenant", shared->front().tenant}, {"reason", "backlog"}});
          IntakeLimiter::Decision full = decision;
          full.retry_after = Millis(1000);
          respond(Throttled(full, s.clock().WallNow(), "backlog watermark"));
          return;
        }
        if (out.over_storage) {
          s.metrics().Inc(CounterId::kIntakeRejections, {{"tenant", shared->front().tenant},
                                                         {"reason", "storage_quota_exceeded"}});
          respond(TooMany("storage_quota_exceeded", StorageMessage(*out.over_storage),
                          StorageRetryMs(s.options()), StorageFields(*out.over_storage)));
          return;
        }
        if (!out.results) {
          respond(Unavailable(s, out.results.error()));
          return;
        }
        respond(Accepted(s, *shared, *out.results, now_ms, out.state));
      });
}

size_t RequestBodyLimit(const IntakeLimits& limits, boost::beast::http::verb method,
                        std::string_view target) {
  static const std::vector<std::string> kBatch = {"v1", "deliveries", "batch"};
  if (method == boost::beast::http::verb::post && PathSegments(target) == kBatch) {
    return limits.max_batch_bytes;
  }
  return limits.max_payload_bytes + config::kDeliveryBodyAllowance;
}

void CreateBatch(Service& s, const HttpRequest& request, const TenantScope& scope,
                 Respond respond) {
  const size_t max_items = s.options().intake.max_batch_items;
  auto traceparent = RequestTraceparent(request);
  if (!traceparent) {
    respond(ErrorResponse(traceparent.error()));
    return;
  }
  auto items = ReadBatchBody(request.body(), max_items);
  if (!items) {
    respond(ErrorResponse(items.error()));
    return;
  }
  for (size_t i = 0; i < items->size(); ++i) {
    if (!(*items)[i].is_object) {
      continue;
    }
    if (auto forbidden = ApplyScope((*items)[i], scope)) {
      s.metrics().Inc(CounterId::kIntakeRejections, {{"tenant", *scope}, {"reason", "forbidden"}},
                      static_cast<double>(items->size()));
      forbidden->message = fmt::format("deliveries[{}].{}", i, forbidden->message);
      forbidden->field = fmt::format("deliveries[{}].tenant", i);
      respond(ErrorResponse(*forbidden));
      return;
    }
  }
  // Per item: its refusal (the rendered result) when refused before the write, else its parts
  // in `pending`, in item order (`slots` names each part's item).
  std::vector<std::string> refused(items->size());
  auto pending = std::make_shared<std::vector<storage::NewDelivery>>();
  pending->reserve(items->size());
  std::vector<size_t> slots;
  slots.reserve(items->size());
  std::map<std::string, int64_t> per_tenant;
  CredentialPlatforms credentials(s.credentials());
  // Every item's quota charge, reserved until the write is done (items refused later for their
  // tenant's budget only hold theirs a little longer).
  QuotaBook::Reservation reserved;
  for (size_t i = 0; i < items->size(); ++i) {
    auto one = CheckItem(s, std::move((*items)[i]), credentials);
    auto parts = one ? SplitDelivery(std::move(*one))
                     : tl::expected<std::vector<storage::NewDelivery>, ApiError>(
                           tl::unexpected(std::move(one.error())));
    if (!parts) {
      refused[i] = RefusalText(parts.error());
      continue;
    }
    std::vector<std::string> shadow_refused;
    if (auto denial = s.quotas().Charge(*parts, reserved, &shadow_refused)) {
      CountQuotaRejection(s, parts->front().tenant, *denial);
      refused[i] = QuotaRefusalText(*denial);
      continue;
    }
    CountShadowQuotaRejections(s, parts->front().tenant, shadow_refused);
    per_tenant[parts->front().tenant] += static_cast<int64_t>(parts->size());
    for (storage::NewDelivery& part : *parts) {
      part.traceparent = *traceparent;
      slots.push_back(i);
      pending->push_back(std::move(part));
    }
  }
  std::map<std::string, IntakeLimiter::Decision> denied;
  std::vector<std::shared_ptr<void>> slots_taken;
  for (const auto& [tenant, n] : per_tenant) {
    std::shared_ptr<void> slot = s.request_slots().TryTake(tenant);
    if (!slot) {
      denied.emplace(tenant,
                     IntakeLimiter::Decision{.allowed = false, .retry_after = Millis(1000)});
      s.metrics().Inc(CounterId::kIntakeRejections, {{"tenant", tenant}, {"reason", "in_flight"}},
                      static_cast<double>(n));
      continue;
    }
    auto d = s.intake_limiter().Take(tenant, n);
    if (!d.allowed) {
      denied.emplace(tenant, d);
      s.metrics().Inc(CounterId::kIntakeRejections,
                      {{"tenant", tenant}, {"reason", "rate_limited"}}, static_cast<double>(n));
      continue;
    }
    slots_taken.push_back(std::move(slot));
  }
  if (!denied.empty()) {
    DropDenied(denied, *pending, slots, refused);
  }
  if (pending->empty() && !denied.empty()) {
    s.quotas().Release(reserved);
    // Each tenant was refused for its budget (with its headers) or for its requests in flight.
    auto metered = std::find_if(denied.begin(), denied.end(),
                                [](const auto& d) { return d.second.budget.limit > 0; });
    respond(metered == denied.end()
                ? TooManyInFlight(s.request_slots().per_tenant())
                : Throttled(metered->second, s.clock().WallNow(), "intake budget"));
    return;
  }
  const int64_t now_ms = ToUnixMillis(s.clock().WallNow());
  const uint64_t watermark = s.options().backlog_watermark;
  // The write owns the parts, their slots and the refusals until it is done: the storage thread
  // drops the parts of tenants over their backlog watermark, then writes the rest.
  auto write = std::make_shared<BatchWrite>();
  write->pending = std::move(*pending);
  write->slots = std::move(slots);
  write->refused = std::move(refused);
  for (const auto& [tenant, n] : per_tenant) {
    if (const uint64_t bound = StoredBytesBound(s.options(), tenant); bound > 0) {
      write->storage_bounds.emplace(tenant, bound);
    }
  }
  write->storage_retry_ms = StorageRetryMs(s.options());
  OnStore(
      s,
      [write, now_ms, watermark](storage::QueueStore& store) {
        return WriteBatch(store, *write, now_ms, watermark);
      },
      [&s, write, now_ms, slots_taken = std::move(slots_taken), reserved = std::move(reserved),
       respond = std::move(respond)](auto stored) mutable {
        s.quotas().Release(reserved);
        for (const auto& [tenant, n] : write->over_backlog) {
          s.metrics().Inc(CounterId::kIntakeRejections, {{"tenant", tenant}, {"reason", "backlog"}},
                          static_cast<double>(n));
        }
        for (const auto& [tenant, n] : write->over_storage) {
          s.metrics().Inc(CounterId::kIntakeRejections,
                          {{"tenant", tenant}, {"reason", "storage_quota_exceeded"}},
                          static_cast<double>(n));
        }
        if (!stored) {
          respond(Unavailable(s, stored.error()));
          return;
        }
        respond(BatchAnswer(s, std::move(write->pending), write->slots, *stored, write->refused,
                            now_ms));
      });
}

}  // namespace egress::service
