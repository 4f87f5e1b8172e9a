#include "storage/delivery_json.h"

#include <cstdint>
#include <string>
#include <string_view>

#include "dispatcher/base/redact.h"

namespace egress::storage {
namespace {

using nlohmann::json;

// Bytes taken by the UTF-8 sequence at s[i] when it is well-formed (Unicode Table 3-7: no
// overlongs, no surrogates, nothing past U+10FFFF), with `ok` true; otherwise the length of its
// maximal ill-formed subpart (at least 1), with `ok` false.
size_t ScanSequence(std::string_view s, size_t i, bool& ok) {
  const auto b = static_cast<uint8_t>(s[i]);
  ok = false;
  if (b < 0x80) {
    ok = true;
    return 1;
  }
  size_t need = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // the range of the next continuation byte
  if (b >= 0xC2 && b <= 0xDF) {
    need = 1;
  } else if (b == 0xE0) {
    need = 2, lo = 0xA0;
  } else if (b == 0xED) {
    need = 2, hi = 0x9F;
  } else if (b >= 0xE1 && b <= 0xEF) {
    need = 2;
  } else if (b == 0xF0) {
    need = 3, lo = 0x90;
  } else if (b == 0xF4) {
    need = 3, hi = 0x8F;
  } else if (b >= 0xF1 && b <= 0xF3) {
    need = 3;
  } else {
    return 1;
  }
  for (size_t n = 1; n <= need; ++n) {
    if (i + n >= s.size()) {
      return n;
    }
    const auto c = static_cast<uint8_t>(s[i + n]);
    if (c < lo || c > hi) {
      return n;
    }
    lo = 0x80, hi = 0xBF;
  }
  ok = true;
  return need + 1;
}

// `s` as valid UTF-8: each maximal ill-formed subpart becomes U+FFFD. Unchanged when valid.
std::string Utf8Text(std::string_view s) {
  std::string out;
  bool copying = false;  // out holds s[0, i) repaired
  for (size_t i = 0; i < s.size();) {
    bool ok = false;
    const size_t n = ScanSequence(s, i, ok);
    if (!ok && !copying) {
      out.assign(s.substr(0, i));
      copying = true;
    }
    if (copying) {
      out.append(ok ? s.substr(i, n) : std::string_view("\xEF\xBF\xBD"));
    }
    i += n;
  }
  return copying ? out : std::string(s);
}

// Whether the JSON text `s` nests arrays and objects deeper than `max` (strings skipped).
bool NestsDeeperThan(std::string_view s, int max) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max) {
        return true;
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

json PayloadView(const std::string& payload) {
  if (!NestsDeeperThan(payload, kMaxPayloadViewDepth)) {
    // Parsing checks UTF-8, so whatever parses is safe to serialise.
    json parsed = json::parse(payload, nullptr, false);
    if (!parsed.is_discarded()) {
      return parsed;
    }
  }
  return json(Utf8Text(payload));
}

json HistoryView(const std::vector<Attempt>& history) {
  json out = json::array();
  for (const Attempt& a : history) {
    json headers = json::object();
    for (const auto& [name, value] : a.rate_limit_headers) {
      headers[Utf8Text(name)] = Utf8Text(value);
    }
    out.push_back({{"at_ms", a.at_ms},
                   {"duration_ms", a.duration_ms},
                   {"http_status", a.http_status},
                   {"platform_error", Utf8Text(a.platform_error)},
                   {"detail", Utf8Text(RedactText(a.detail))},
                   {"rate_limit_headers", std::move(headers)}});
  }
  return out;
}

}  // namespace

json DeliveryToJson(const Delivery& d, bool with_payload) {
  json j = {{"id", Utf8Text(d.id)},
            {"tenant", Utf8Text(d.tenant)},
            {"platform", Utf8Text(d.platform)},
            {"destination", Utf8Text(RedactDestination(d.destination))},
            {"credential", Utf8Text(d.credential)},
            {"state", std::string(StateName(d.state))},
            {"attempts", d.attempts},
            {"cost", d.cost},
            {"priority", std::string(pacing::PriorityName(d.priority))},
            {"created_ms", d.created_ms},
            {"updated_ms", d.updated_ms}};
  if (!d.idempotency_key.empty()) {
    j["idempotency_key"] = Utf8Text(d.idempotency_key);
  }
  if (!d.ordering_key.empty()) {
    j["ordering_key"] = Utf8Text(d.ordering_key);
  }
  if (!d.traceparent.empty()) {
    j["traceparent"] = Utf8Text(d.traceparent);
  }
  if (IsWaiting(d.state)) {
    j["next_attempt_ms"] = d.next_attempt_ms;
  }
  if (!d.reason.empty()) {
    j["reason"] = Utf8Text(RedactText(d.reason));
  }
  if (d.finished_ms != 0) {
    j["finished_ms"] = d.finished_ms;
  }
  j["attempts_history"] = HistoryView(d.history);
  if (with_payload) {
    j["payload"] = PayloadView(d.payload);
  }
  return j;
}

}  // namespace egress::storage
