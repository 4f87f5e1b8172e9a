// POST /v1/deliveries/batch.

#include <algorithm>
#include <map>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "adapters/json_reader.h"
#include "dispatcher/service/api/handlers.h"
#include "dispatcher/service/api/http.h"
#include "dispatcher/service/api/intake.h"
#include "dispatcher/service/api/delivery_request.h"
#include "dispatcher/service/service.h"
#include "dispatcher/base/time_text.h"

namespace egress::service {
namespace {

using nlohmann::json;

// The items of {"deliveries":[...]} read straight from the text; nullopt when the text is not
// plainly that (malformed, "deliveries" missing, repeated or not an array, more than
// `max_items` items, a byte order mark): the tree then gives the answer.
std::optional<std::vector<DeliveryFields>> ReadBatchText(std::string_view body, size_t max_items) {
  adapters::JsonReader reader(body);
  if (reader.Peek() != '{' || !reader.EnterObject()) {
    return std::nullopt;
  }
  std::vector<DeliveryFields> items;
  bool seen = false;
  std::string key;
  while (reader.NextKey(key)) {
    if (key != "deliveries") {
      if (!reader.SkipValue()) {
        return std::nullopt;
      }
      continue;
    }
    if (seen || reader.Peek() != '[' || !reader.EnterArray()) {
      return std::nullopt;
    }
    seen = true;
    items.reserve(std::min(max_items, body.size() / 64 + 1));
    while (reader.NextElement()) {
      if (items.size() == max_items) {
        return std::nullopt;
      }
      if (!ReadDeliveryFields(reader, items.emplace_back())) {
        return std::nullopt;
      }
    }
  }
  if (!seen || !reader.AtEnd()) {
    return std::nullopt;
  }
  return items;
}

// The items of a batch body, from the text or else from nlohmann's tree (which answers every
// malformed or misshapen body).
tl::expected<std::vector<DeliveryFields>, ApiError> BatchItems(const HttpRequest& request,
                                                               size_t max_items) {
  if (auto items = ReadBatchText(request.body(), max_items)) {
    return std::move(*items);
  }
  auto body = ParseJsonBody(request);
  if (!body) {
    return tl::unexpected(body.error());
  }
  auto items = body->find("deliveries");
  if (!body->is_object() || items == body->end() || !items->is_array()) {
    return tl::unexpected(
        ApiError{400, "invalid_request", "deliveries: required, an array", "deliveries"});
  }
  std::vector<DeliveryFields> out;
  out.reserve(items->size());
  for (const json& item : *items) {
    out.push_back(FieldsOf(item));
  }
  return out;
}

// An item's refusal as the batch answer lists it: the envelope plus "status".
std::string RefusalText(const ApiError& e) {
  json j = e.ToJson();
  j["status"] = e.http_status;
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Appends `text` as a JSON string, escaped as nlohmann's dump would.
void AppendJsonString(std::string& out, const std::string& text) {
  const bool plain = std::all_of(text.begin(), text.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u < 0x80 && c != '"' && c != '\\';
  });
  if (plain) {
    out += '"';
    out += text;
    out += '"';
  } else {
    out += json(text).dump(-1, ' ', false, json::error_handler_t::replace);
  }
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

}  // namespace

void CreateBatch(Service& s, const HttpRequest& request, Respond respond) {
  const size_t max_items = s.options().intake.max_batch_items;
  auto items = BatchItems(request, max_items);
  if (!items) {
    respond(ErrorResponse(items.error()));
    return;
  }
  if (items->size() > max_items || items->empty()) {
    respond(ErrorResponse({413, "batch_too_large",
                           fmt::format("deliveries: 1 to {} items per batch", max_items),
                           "deliveries"}));
    return;
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
  for (size_t i = 0; i < items->size(); ++i) {
    auto one = CheckItem(s, std::move((*items)[i]), credentials);
    auto parts = one ? SplitDelivery(std::move(*one))
                     : tl::expected<std::vector<storage::NewDelivery>, ApiError>(
                           tl::unexpected(std::move(one.error())));
    if (!parts) {
      refused[i] = RefusalText(parts.error());
      continue;
    }
    per_tenant[parts->front().tenant] += static_cast<int64_t>(parts->size());
    for (storage::NewDelivery& part : *parts) {
      slots.push_back(i);
      pending->push_back(std::move(part));
    }
  }
  std::map<std::string, IntakeLimiter::Decision> denied;
  for (const auto& [tenant, n] : per_tenant) {
    auto d = s.intake_limiter().Take(tenant, n);
    if (!d.allowed) {
      denied.emplace(tenant, d);
      s.metrics().Inc(CounterId::kIntakeRejections,
                      {{"tenant", tenant}, {"reason", "rate_limited"}}, static_cast<double>(n));
    }
  }
  if (!denied.empty()) {
    DropDenied(denied, *pending, slots, refused);
  }
  if (pending->empty() && !denied.empty()) {
    respond(Throttled(denied.begin()->second, s.clock().WallNow(), "intake budget"));
    return;
  }
  const int64_t now_ms = ToUnixMillis(s.clock().WallNow());
  OnStore(
      s,
      [pending, now_ms](storage::QueueStore& store) {
        return store.EnqueueBatch(*pending, now_ms);
      },
      [&s, pending, now_ms, slots = std::move(slots), refused = std::move(refused),
       respond = std::move(respond)](auto stored) mutable {
        if (!stored) {
          respond(Unavailable(stored.error()));
          return;
        }
        respond(BatchAnswer(s, std::move(*pending), slots, *stored, refused, now_ms));
      });
}

}  // namespace egress::service
