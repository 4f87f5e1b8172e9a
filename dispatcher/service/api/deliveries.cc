// POST/GET/DELETE /v1/deliveries...

#include <algorithm>
#include <charconv>
#include <memory>
#include <optional>

#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include "adapters/json_reader.h"
#include "dispatcher/service/api/handlers.h"
#include "dispatcher/service/api/http.h"
#include "dispatcher/service/api/intake.h"
#include "dispatcher/service/api/delivery_request.h"
#include "dispatcher/service/service.h"
#include "dispatcher/base/time_text.h"
#include "storage/delivery_json.h"

namespace egress::service {
namespace {

namespace asio = boost::asio;
using nlohmann::json;
using storage::Delivery;
using storage::DeliveryState;

// The fields of a POST /v1/deliveries body: read straight from the text, or from nlohmann's
// tree when the reader does not take the text (a byte order mark; malformed JSON, which the
// tree answers with its 400).
tl::expected<DeliveryFields, ApiError> BodyFields(const HttpRequest& request) {
  adapters::JsonReader reader(request.body());
  DeliveryFields fields;
  if (ReadDeliveryFields(reader, fields) && reader.AtEnd()) {
    return fields;
  }
  auto body = ParseJsonBody(request);
  if (!body) {
    return tl::unexpected(body.error());
  }
  return FieldsOf(*body);
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
  auto fields = BodyFields(request);
  if (!fields) {
    s.metrics().Inc("relay_egress_intake_rejections_total",
                    {{"tenant", ""}, {"reason", "invalid"}});
    respond(ErrorResponse(fields.error()));
    return;
  }
  const std::string tenant_label =
      fields->tenant.kind == RequestField::Kind::kString ? fields->tenant.text : "";
  CredentialPlatforms credentials(s.credentials());
  auto item = CheckItem(s, std::move(*fields), credentials);
  auto parts =
      item
          ? SplitDelivery(std::move(*item))
          : tl::expected<std::vector<storage::NewDelivery>, ApiError>(tl::unexpected(item.error()));
  if (!parts) {
    s.metrics().Inc("relay_egress_intake_rejections_total",
                    {{"tenant", tenant_label}, {"reason", parts.error().code}});
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

void GetDelivery(Service& s, const std::string& id, Respond respond) {
  OnStore(
      s, [id](storage::QueueStore& store) { return store.Get(id); },
      [respond = std::move(respond)](Result<Delivery> d) {
        respond(d ? JsonResponse(200, storage::DeliveryToJson(*d, true))
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
          list.push_back(storage::DeliveryToJson(d, false));
        }
        json out = {{"deliveries", list}};
        out["next_cursor"] = page->next_cursor.empty() ? json(nullptr) : json(page->next_cursor);
        respond(JsonResponse(200, out));
      });
}

}  // namespace egress::service
