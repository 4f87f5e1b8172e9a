// /api/admin/pauses: an operator's pauses (docs/api.md, "Pauses"). Route authorizes the admin
// token before any of these runs.

#include <random>

#include <fmt/format.h>

#include "dispatcher/base/redact.h"
#include "dispatcher/service/api/handlers.h"
#include "dispatcher/service/api/http.h"
#include "dispatcher/service/event_log.h"
#include "dispatcher/service/pause_book.h"
#include "dispatcher/service/service.h"

namespace egress::service {
namespace {

using nlohmann::json;

// "pause_" and 16 hex digits: unguessable enough that two nodes never draw the same one.
std::string NewPauseId() {
  std::random_device device;
  const uint64_t bits = (static_cast<uint64_t>(device()) << 32) | device();
  return fmt::format("pause_{:016x}", bits);
}

// What the log says of a pause: its scope as the API shows it; the reason is operator text,
// redacted like any.
void LogPause(std::string_view event, const Pause& p, std::string_view source) {
  LogEvent(LogLevel::kInfo, event,
           {{"pause", p.id},
            {"tenant", p.tenant},
            {"platform", p.platform},
            {"credential", p.credential},
            {"destination", p.destination},
            {"reason", RedactText(p.reason)},
            {"source", source}});
}

ApiError PauseLimit() {
  return {409, "pause_limit",
          fmt::format("{} pauses are in force, the most there may be; resume one or pause a wider "
                      "scope",
                      PauseBook::kMaxPauses)};
}

}  // namespace

void CreatePause(Service& s, const HttpRequest& request, Respond respond) {
  auto body = ParseJsonBody(request);
  if (!body) {
    return respond(ErrorResponse(body.error()));
  }
  auto pause = PauseFromRequest(*body, s.options().store.max_field_bytes);
  if (!pause) {
    return respond(ErrorResponse(pause.error()));
  }
  // The same scope twice is the pause in force: one DELETE ends it.
  if (const Pause* held = s.pauses().FindScope(*pause)) {
    return respond(JsonResponse(200, PauseToJson(*held)));
  }
  if (s.pauses().size() >= PauseBook::kMaxPauses) {
    return respond(ErrorResponse(PauseLimit()));
  }
  pause->id = NewPauseId();
  pause->created_ms = ToUnixMillis(s.clock().WallNow());
  std::string text = PauseToJson(*pause).dump();
  std::string key = PauseKey(pause->id);  // before the lambda below takes the pause
  StoreSettingThenApply(s, std::move(key), text, std::move(respond),
                        [&s, pause = std::move(*pause), text](Respond respond) mutable {
                          if (s.pauses().size() >= PauseBook::kMaxPauses) {
                            // Past the limit since the check (POSTs at once): the stored record
                            // is taken back, so a restart does not put it in force.
                            StoreSettingThenApply(
                                s, PauseKey(pause.id), "", std::move(respond),
                                [](Respond respond) { respond(ErrorResponse(PauseLimit())); });
                            return;
                          }
                          s.PutPause(pause);
                          s.SharePause(pause.id, text);
                          LogPause("paused", pause, "api");
                          respond(JsonResponse(201, PauseToJson(pause)));
                        });
}

void ListPauses(Service& s, Respond respond) {
  json list = json::array();
  for (const Pause& p : s.pauses().InCreationOrder()) {
    list.push_back(PauseToJson(p));
  }
  respond(JsonResponse(200, {{"pauses", std::move(list)}}));
}

void DeletePause(Service& s, const std::string& id, Respond respond) {
  const Pause* held = IsPauseId(id) ? s.pauses().Find(id) : nullptr;
  if (held == nullptr) {
    return respond(ErrorResponse({404, "not_found", "no pause in force has this id"}));
  }
  StoreSettingThenApply(s, PauseKey(id), "", std::move(respond),
                        [&s, pause = *held](Respond respond) {
                          s.RemovePause(pause.id);  // false: another node's DELETE came first
                          s.SharePause(pause.id, "");
                          LogPause("resumed", pause, "api");
                          json answer = PauseToJson(pause);
                          answer["resumed"] = true;
                          respond(JsonResponse(200, answer));
                        });
}

}  // namespace egress::service
