// Replay and cancel: POST /v1/deliveries/{id}/replay, POST /v1/deliveries/replay,
// DELETE /v1/deliveries/{id}.

#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include "dispatcher/service/api/handlers.h"
#include "dispatcher/service/api/http.h"
#include "dispatcher/service/service.h"

namespace egress::service {
namespace {

namespace asio = boost::asio;
using nlohmann::json;
using storage::Delivery;
using storage::DeliveryState;

// Dead -> queued with a fresh attempt count; deferred -> queued, due now. Runs on the pool.
Result<Delivery> Replay(storage::QueueStore& store, const std::string& id, int64_t now_ms) {
  auto d = store.Get(id);
  if (!d) {
    return d;
  }
  if (d->state != DeliveryState::kDead && d->state != DeliveryState::kDeferred) {
    return Status::FailedPrecondition(
        fmt::format("delivery {} is {}; only dead and deferred deliveries can be replayed", id,
                    storage::StateName(d->state)));
  }
  storage::StateChange change{.to = DeliveryState::kQueued, .at_ms = now_ms};
  change.expect = d->state;
  change.reset_attempts = d->state == DeliveryState::kDead;
  return store.Apply(id, change);
}

struct ReplaySummary {
  Status status;
  size_t matched = 0;
  size_t replayed = 0;
  std::vector<Delivery> queued;  // to notify the loop
};

constexpr size_t kMaxReplayPerCall = 100'000;

}  // namespace

void ReplayDelivery(Service& s, const std::string& id, Respond respond) {
  const int64_t now_ms = ToUnixMillis(s.clock().WallNow());
  asio::post(s.storage_pool(), [&s, id, now_ms, respond = std::move(respond)]() mutable {
    auto d = Replay(s.store(), id, now_ms);
    asio::post(s.io(), [&s, d = std::move(d), respond = std::move(respond)] {
      if (!d) {
        respond(ErrorResponse(FromStatus(d.error())));
        return;
      }
      s.loop().Notify(*d);
      respond(JsonResponse(200, {{"id", d->id}, {"state", "queued"}}));
    });
  });
}

void ReplayMatching(Service& s, const HttpRequest& request, Respond respond) {
  auto body = ParseJsonBody(request);
  if (!body || !body->is_object()) {
    respond(ErrorResponse(body ? ApiError{400, "invalid_request", "body: must be a JSON object"}
                               : body.error()));
    return;
  }
  storage::ListFilter f;
  const std::string state = body->value("state", std::string("dead"));
  f.state = storage::ParseState(state);
  if (f.state != DeliveryState::kDead && f.state != DeliveryState::kDeferred) {
    respond(ErrorResponse({400, "invalid_request", "state: must be dead or deferred", "state"}));
    return;
  }
  f.tenant = body->value("tenant", std::string());
  f.platform = body->value("platform", std::string());
  f.destination = body->value("destination", std::string());
  f.reason_prefix = body->value("reason", std::string());
  f.limit = 1000;
  const bool dry_run = body->value("dry_run", false);
  const int64_t now_ms = ToUnixMillis(s.clock().WallNow());
  asio::post(s.storage_pool(), [&s, f, dry_run, now_ms, respond = std::move(respond)]() mutable {
    ReplaySummary sum;
    storage::ListFilter page_filter = f;
    while (sum.matched < kMaxReplayPerCall) {
      auto page = s.store().List(page_filter);
      if (!page) {
        sum.status = page.error();
        break;
      }
      for (const Delivery& d : page->deliveries) {
        ++sum.matched;
        if (dry_run) {
          continue;
        }
        if (auto r = Replay(s.store(), d.id, now_ms); r) {
          ++sum.replayed;
          sum.queued.push_back(std::move(*r));
        }
      }
      if (page->next_cursor.empty()) {
        break;
      }
      page_filter.after_id = page->next_cursor;
    }
    asio::post(s.io(), [&s, sum = std::move(sum), dry_run, respond = std::move(respond)] {
      if (!sum.status.ok()) {
        respond(ErrorResponse(FromStatus(sum.status)));
        return;
      }
      for (const Delivery& d : sum.queued) {
        s.loop().Notify(d);
      }
      respond(JsonResponse(
          200, {{"matched", sum.matched}, {"replayed", sum.replayed}, {"dry_run", dry_run}}));
    });
  });
}

void CancelDelivery(Service& s, const std::string& id, Respond respond) {
  const int64_t now_ms = ToUnixMillis(s.clock().WallNow());
  asio::post(s.storage_pool(), [&s, id, now_ms, respond = std::move(respond)]() mutable {
    auto d = s.store().Get(id);
    if (d && !storage::IsWaiting(d->state)) {
      d = Status::FailedPrecondition(
          fmt::format("delivery {} is {}; only queued and deferred deliveries can be cancelled", id,
                      storage::StateName(d->state)));
    } else if (d) {
      storage::StateChange change{.to = DeliveryState::kCancelled, .at_ms = now_ms};
      change.expect = d->state;
      d = s.store().Apply(id, change);
    }
    asio::post(s.io(), [d = std::move(d), respond = std::move(respond)] {
      respond(d ? JsonResponse(200, {{"id", d->id}, {"state", "cancelled"}})
                : ErrorResponse(FromStatus(d.error())));
    });
  });
}

}  // namespace egress::service
