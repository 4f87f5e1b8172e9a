#include "dispatcher/service/api/delivery_request.h"

namespace egress::service {

using nlohmann::json;

json DeliveryToJson(const storage::Delivery& d, bool with_payload) {
  json j = {{"id", d.id},
            {"tenant", d.tenant},
            {"platform", d.platform},
            {"destination", d.destination},
            {"credential", d.credential},
            {"state", std::string(storage::StateName(d.state))},
            {"attempts", d.attempts},
            {"cost", d.cost},
            {"created_ms", d.created_ms},
            {"updated_ms", d.updated_ms}};
  if (!d.idempotency_key.empty()) {
    j["idempotency_key"] = d.idempotency_key;
  }
  if (!d.ordering_key.empty()) {
    j["ordering_key"] = d.ordering_key;
  }
  if (storage::IsWaiting(d.state)) {
    j["next_attempt_ms"] = d.next_attempt_ms;
  }
  if (!d.reason.empty()) {
    j["reason"] = d.reason;
  }
  if (d.finished_ms != 0) {
    j["finished_ms"] = d.finished_ms;
  }
  json history = json::array();
  for (const storage::Attempt& a : d.history) {
    json headers = json::object();
    for (const auto& [name, value] : a.rate_limit_headers) {
      headers[name] = value;
    }
    history.push_back({{"at_ms", a.at_ms},
                       {"duration_ms", a.duration_ms},
                       {"http_status", a.http_status},
                       {"platform_error", a.platform_error},
                       {"detail", a.detail},
                       {"rate_limit_headers", headers}});
  }
  j["attempts_history"] = std::move(history);
  if (with_payload) {
    json payload = json::parse(d.payload, nullptr, false);
    j["payload"] = payload.is_discarded() ? json(d.payload) : payload;
  }
  return j;
}

}  // namespace egress::service
