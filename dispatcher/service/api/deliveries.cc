// GET /v1/deliveries and GET /v1/deliveries/{id}: the views of stored deliveries (intake is in
// intake.cc, replay and cancel in steering.cc).

#include <algorithm>
#include <charconv>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "dispatcher/base/time_text.h"
#include "dispatcher/service/api/handlers.h"
#include "dispatcher/service/api/http.h"
#include "dispatcher/service/service.h"
#include "storage/delivery_json.h"

namespace egress::service {
namespace {

using nlohmann::json;
using storage::Delivery;

}  // namespace

Result<Delivery> GetInScope(storage::QueueStore& store, const std::string& id,
                            const TenantScope& scope) {
  Result<Delivery> d = store.Get(id);
  if (d && !InScope(scope, d->tenant)) {
    // Another tenant's delivery is absent as far as this caller can tell: the store's words.
    return Status::NotFound(fmt::format("delivery {} not found", id));
  }
  return d;
}

void GetDelivery(Service& s, const std::string& id, const TenantScope& scope, Respond respond) {
  OnStore(
      s, [id, scope](storage::QueueStore& store) { return GetInScope(store, id, scope); },
      [respond = std::move(respond)](Result<Delivery> d) {
        respond(d ? JsonResponse(200, storage::DeliveryToJson(*d, true))
                  : ErrorResponse(FromStatus(d.error())));
      });
}

void ListDeliveries(Service& s, const std::map<std::string, std::string>& q,
                    const TenantScope& scope, Respond respond) {
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
  if (auto forbidden = ConfineTenantFilter(scope, "tenant", f.tenant)) {
    respond(ErrorResponse(*forbidden));
    return;
  }
  f.platform = get("platform");
  f.destination = get("destination");
  f.reason_prefix = get("reason");
  f.after_id = get("cursor");
  // A filter no stored field could match (a control character, longer than any stored field)
  // is a mistake to report, not an empty page.
  const size_t max = s.options().store.max_field_bytes;
  for (auto [name, value] :
       {std::pair{"tenant", &f.tenant}, std::pair{"platform", &f.platform},
        std::pair{"destination", &f.destination}, std::pair{"reason", &f.reason_prefix},
        std::pair{"cursor", &f.after_id}}) {
    if (auto bad = CheckRequestText(name, *value, max)) {
      respond(ErrorResponse(*bad));
      return;
    }
  }
  if (auto bad = CheckPlatformFilter("platform", f.platform)) {
    respond(ErrorResponse(*bad));
    return;
  }
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
