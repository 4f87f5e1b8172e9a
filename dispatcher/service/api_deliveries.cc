// POST/GET/DELETE /v1/deliveries...

#include <charconv>
#include <memory>

#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include "dispatcher/service/api_handlers.h"
#include "dispatcher/service/api_http.h"
#include "dispatcher/service/delivery_request.h"
#include "dispatcher/service/service.h"
#include "dispatcher/time_text.h"

namespace egress::service {
namespace {

namespace asio = boost::asio;
using nlohmann::json;
using storage::Delivery;
using storage::DeliveryState;

// Runs `work` on the storage pool, then `done(result)` on the loop.
template <class Work, class Done>
void OnStore(Service& s, Work work, Done done) {
  asio::post(s.storage_pool(), [&s, work = std::move(work), done = std::move(done)]() mutable {
    auto result = work(s.store());
    asio::post(s.io(), [done = std::move(done), result = std::move(result)]() mutable {
      done(std::move(result));
    });
  });
}

// The 429 of the backpressure contract, with every header.
HttpResponse Throttled(const IntakeLimiter::Decision& d, WallTime now, std::string_view why) {
  const int64_t retry_ms = std::max<int64_t>(1, d.retry_after.count());
  const int64_t retry_s = (retry_ms + 999) / 1000;
  const int64_t reset_s = (d.reset_after.count() + 999) / 1000;
  const int64_t window_s = std::max<int64_t>(1, (d.budget.scale_ms + 999) / 1000);
  HttpResponse res =
      JsonResponse(429, {{"error", "rate_limited"},
                         {"message", fmt::format("tenant is over its {}; retry later", why)},
                         {"retry_after_ms", retry_ms}});
  res.set("Retry-After", std::to_string(retry_s));
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

HttpResponse Unavailable(const Status& s) {
  HttpResponse res = ErrorResponse(FromStatus(s));
  if (res.result_int() == 503) {
    res.set("Retry-After", "1");
  }
  return res;
}

Delivery Queued(const storage::NewDelivery& in, const std::string& id, int64_t now_ms) {
  Delivery d;
  d.id = id;
  d.tenant = in.tenant;
  d.platform = in.platform;
  d.destination = in.destination;
  d.credential = in.credential;
  d.created_ms = now_ms;
  d.updated_ms = now_ms;
  d.next_attempt_ms = now_ms;
  d.cost = in.cost;
  d.ordering_key = in.ordering_key;
  return d;
}

// Parses and checks one item: shape, then the tenant's credential.
tl::expected<storage::NewDelivery, ApiError> CheckItem(Service& s, const json& item) {
  auto parsed = ParseDeliveryRequest(item, s.options().intake);
  if (!parsed) {
    return parsed;
  }
  auto cred = s.credentials().Find(parsed->tenant, parsed->credential);
  if (!cred) {
    return tl::unexpected(ApiError{422, "unknown_credential",
                                   fmt::format("credential: '{}' is not registered for tenant '{}'",
                                               parsed->credential, parsed->tenant),
                                   "credential"});
  }
  if (cred->platform != parsed->platform) {
    return tl::unexpected(
        ApiError{422, "credential_platform_mismatch",
                 fmt::format("credential: '{}' is a {} credential, not {}", parsed->credential,
                             cred->platform, parsed->platform),
                 "credential"});
  }
  return parsed;
}

struct EnqueueOutcome {
  // One result per part (a LINE multicast over 500 recipients is several deliveries).
  Result<std::vector<Result<storage::EnqueueResult>>> results = Status::Unavailable("not run");
  bool over_backlog = false;
  std::string state;  // the first part's state when it was already stored
};

// Stores the parts of one request in one synced write (unless the tenant is over its backlog).
EnqueueOutcome EnqueueParts(storage::QueueStore& store,
                            const std::vector<storage::NewDelivery>& parts, int64_t now_ms,
                            uint64_t watermark) {
  EnqueueOutcome out;
  auto backlog = store.TenantBacklog(parts.front().tenant);
  if (backlog && *backlog >= watermark) {
    out.over_backlog = true;
    return out;
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
      s.metrics().Inc("relay_egress_deliveries_accepted_total",
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

}  // namespace

void CreateDelivery(Service& s, const HttpRequest& request, Respond respond) {
  auto body = ParseJsonBody(request);
  if (!body) {
    s.metrics().Inc("relay_egress_intake_rejections_total",
                    {{"tenant", ""}, {"reason", "invalid"}});
    respond(ErrorResponse(body.error()));
    return;
  }
  auto item = CheckItem(s, *body);
  auto parts =
      item
          ? SplitDelivery(std::move(*item))
          : tl::expected<std::vector<storage::NewDelivery>, ApiError>(tl::unexpected(item.error()));
  if (!parts) {
    s.metrics().Inc(
        "relay_egress_intake_rejections_total",
        {{"tenant",
          body->value("tenant", json("")).is_string() ? body->value("tenant", std::string()) : ""},
         {"reason", parts.error().code}});
    respond(ErrorResponse(parts.error()));
    return;
  }
  const std::string tenant = parts->front().tenant;
  auto decision = s.intake_limiter().Take(tenant, static_cast<int64_t>(parts->size()));
  if (!decision.allowed) {
    s.metrics().Inc("relay_egress_intake_rejections_total",
                    {{"tenant", tenant}, {"reason", "rate_limited"}});
    respond(Throttled(decision, s.clock().WallNow(), "intake budget"));
    return;
  }
  const int64_t now_ms = ToUnixMillis(s.clock().WallNow());
  const uint64_t watermark = s.options().backlog_watermark;
  auto shared = std::make_shared<const std::vector<storage::NewDelivery>>(std::move(*parts));
  OnStore(
      s,
      [shared, now_ms, watermark](storage::QueueStore& store) {
        return EnqueueParts(store, *shared, now_ms, watermark);
      },
      [&s, shared, now_ms, decision, respond = std::move(respond)](EnqueueOutcome out) {
        if (out.over_backlog) {
          s.metrics().Inc("relay_egress_intake_rejections_total",
                          {{"tenant", shared->front().tenant}, {"reason", "backlog"}});
          IntakeLimiter::Decision full = decision;
          full.retry_after = Millis(1000);
          respond(Throttled(full, s.clock().WallNow(), "backlog watermark"));
          return;
        }
        if (!out.results) {
          respond(Unavailable(out.results.error()));
          return;
        }
        respond(Accepted(s, *shared, *out.results, now_ms, out.state));
      });
}

void CreateBatch(Service& s, const HttpRequest& request, Respond respond) {
  auto body = ParseJsonBody(request);
  if (!body) {
    respond(ErrorResponse(body.error()));
    return;
  }
  auto items = body->find("deliveries");
  if (!body->is_object() || items == body->end() || !items->is_array()) {
    respond(
        ErrorResponse({400, "invalid_request", "deliveries: required, an array", "deliveries"}));
    return;
  }
  if (items->size() > s.options().intake.max_batch_items || items->empty()) {
    respond(ErrorResponse(
        {413, "batch_too_large",
         fmt::format("deliveries: 1 to {} items per batch", s.options().intake.max_batch_items),
         "deliveries"}));
    return;
  }
  // Per item: an error now, or an index into the write.
  std::vector<json> results(items->size());
  std::vector<storage::NewDelivery> valid;
  std::vector<size_t> slots;
  std::map<std::string, int64_t> per_tenant;
  std::vector<tl::expected<std::vector<storage::NewDelivery>, ApiError>> checked;
  for (const json& item : *items) {
    auto one = CheckItem(s, item);
    checked.push_back(one ? SplitDelivery(std::move(*one))
                          : tl::unexpected(std::move(one.error())));
    if (checked.back()) {
      per_tenant[checked.back()->front().tenant] += static_cast<int64_t>(checked.back()->size());
    }
  }
  std::map<std::string, IntakeLimiter::Decision> denied;
  for (const auto& [tenant, n] : per_tenant) {
    auto d = s.intake_limiter().Take(tenant, n);
    if (!d.allowed) {
      denied.emplace(tenant, d);
      s.metrics().Inc("relay_egress_intake_rejections_total",
                      {{"tenant", tenant}, {"reason", "rate_limited"}}, static_cast<double>(n));
    }
  }
  for (size_t i = 0; i < checked.size(); ++i) {
    if (!checked[i]) {
      results[i] = checked[i].error().ToJson();
      results[i]["status"] = checked[i].error().http_status;
    } else if (auto it = denied.find(checked[i]->front().tenant); it != denied.end()) {
      results[i] = {{"error", "rate_limited"},
                    {"status", 429},
                    {"retry_after_ms", std::max<int64_t>(1, it->second.retry_after.count())}};
    } else {
      for (storage::NewDelivery& part : *checked[i]) {
        slots.push_back(i);
        valid.push_back(std::move(part));
      }
    }
  }
  if (valid.empty() && !denied.empty()) {
    respond(Throttled(denied.begin()->second, s.clock().WallNow(), "intake budget"));
    return;
  }
  const int64_t now_ms = ToUnixMillis(s.clock().WallNow());
  OnStore(
      s, [valid, now_ms](storage::QueueStore& store) { return store.EnqueueBatch(valid, now_ms); },
      [&s, valid, slots, now_ms, results = std::move(results),
       respond = std::move(respond)](auto stored) mutable {
        if (!stored) {
          respond(Unavailable(stored.error()));
          return;
        }
        // Parts of one item (a split LINE multicast) are adjacent in `slots`.
        bool all_ok = true;
        std::vector<bool> answered(results.size(), false);
        for (size_t k = 0; k < slots.size(); ++k) {
          const auto& r = (*stored)[k];
          json& result = results[slots[k]];
          if (!r) {
            ApiError e = FromStatus(r.error());
            result = e.ToJson();
            result["status"] = e.http_status;
            answered[slots[k]] = true;
            continue;
          }
          if (r->created) {
            s.metrics().Inc("relay_egress_deliveries_accepted_total",
                            {{"tenant", valid[k].tenant}, {"platform", valid[k].platform}});
            s.loop().Notify(Queued(valid[k], r->id, now_ms));
          }
          if (!answered[slots[k]]) {
            answered[slots[k]] = true;
            result = {{"id", r->id}, {"state", "queued"}, {"created", r->created}};
            if (k + 1 < slots.size() && slots[k + 1] == slots[k]) {
              result["ids"] = json::array();
            }
          } else if (result.contains("error")) {
            continue;
          } else if (r->created) {
            result["created"] = true;
          }
          if (result.contains("ids")) {
            result["ids"].push_back(r->id);
          }
        }
        for (size_t i = 0; i < results.size(); ++i) {
          all_ok = all_ok && answered[i] && !results[i].contains("error");
        }
        respond(JsonResponse(all_ok ? 202 : 207, {{"results", results}}));
      });
}

void GetDelivery(Service& s, const std::string& id, Respond respond) {
  OnStore(
      s, [id](storage::QueueStore& store) { return store.Get(id); },
      [respond = std::move(respond)](Result<Delivery> d) {
        respond(d ? JsonResponse(200, DeliveryToJson(*d, true))
                  : ErrorResponse(FromStatus(d.error())));
      });
}

void ListDeliveries(Service& s, const std::map<std::string, std::string>& q, Respond respond) {
  storage::ListFilter f;
  auto get = [&](const char* k) {
    auto it = q.find(k);
    return it == q.end() ? std::string() : it->second;
  };
  if (std::string state = get("state"); !state.empty()) {
    f.state = storage::ParseState(state);
    if (!f.state) {
      respond(
          ErrorResponse({400, "invalid_request", "state: unknown state '" + state + "'", "state"}));
      return;
    }
  }
  f.tenant = get("tenant");
  f.platform = get("platform");
  f.destination = get("destination");
  f.reason_prefix = get("reason");
  f.after_id = get("cursor");
  if (std::string limit = get("limit"); !limit.empty()) {
    int n = 0;
    auto [p, ec] = std::from_chars(limit.data(), limit.data() + limit.size(), n);
    if (ec != std::errc() || p != limit.data() + limit.size() || n < 1 || n > 1000) {
      respond(ErrorResponse({400, "invalid_request", "limit: an integer from 1 to 1000", "limit"}));
      return;
    }
    f.limit = static_cast<size_t>(n);
  }
  for (auto [name, bound] : {std::pair{"since", &f.since_ms}, std::pair{"until", &f.until_ms}}) {
    if (std::string text = get(name); !text.empty()) {
      auto ms = ParseTimeMillis(text);
      if (!ms) {
        respond(ErrorResponse(
            {400, "invalid_request",
             fmt::format("{}: Unix ms or RFC 3339 ({})", name, ms.error().message()), name}));
        return;
      }
      *bound = *ms;
    }
  }
  OnStore(
      s, [f](storage::QueueStore& store) { return store.List(f); },
      [respond = std::move(respond)](Result<storage::ListPage> page) {
        if (!page) {
          respond(ErrorResponse(FromStatus(page.error())));
          return;
        }
        json list = json::array();
        for (const Delivery& d : page->deliveries) {
          list.push_back(DeliveryToJson(d, false));
        }
        json out = {{"deliveries", list}};
        out["next_cursor"] = page->next_cursor.empty() ? json(nullptr) : json(page->next_cursor);
        respond(JsonResponse(200, out));
      });
}

}  // namespace egress::service
