#include "dispatcher/service/pause_book.h"

#include <algorithm>
#include <array>
#include <optional>

#include <fmt/format.h>

#include "adapters/api_key.h"
#include "dispatcher/base/hex.h"
#include "dispatcher/base/platform.h"
#include "dispatcher/base/redact.h"
#include "dispatcher/base/time_text.h"
#include "dispatcher/service/api/http.h"

namespace egress::service {
namespace {

using nlohmann::json;

constexpr std::string_view kIdHead = "pause_";
constexpr size_t kIdHexDigits = 16;

// The exact destination's SHA-256, as hex: what a pause keeps of a destination with a secret.
std::string DestinationDigest(std::string_view destination) {
  return HexEncode(adapters::ApiKeyDigest(destination));  // SHA-256 of any text
}

ApiError Invalid(const std::string& field, const std::string& why) {
  return ApiError{400, "invalid_request", field + ": " + why, field};
}

}  // namespace

json PauseToJson(const Pause& pause) {
  json out = {{"id", pause.id}};
  const std::array<std::pair<std::string_view, const std::string*>, 5> fields = {{
      {"tenant", &pause.tenant},
      {"platform", &pause.platform},
      {"credential", &pause.credential},
      {"destination", &pause.destination},
      {"reason", &pause.reason},
  }};
  if (!pause.destination_sha256.empty()) {
    out["destination_sha256"] = pause.destination_sha256;
  }
  for (const auto& [name, value] : fields) {
    if (!value->empty()) {
      out[std::string(name)] = *value;
    }
  }
  out["created"] = FormatRfc3339Seconds(pause.created_ms);
  out["created_ms"] = pause.created_ms;
  return out;
}

tl::expected<Pause, ApiError> PauseFromRequest(const json& body, size_t max_field_bytes) {
  if (!body.is_object()) {
    return tl::unexpected(ApiError{400, "invalid_request", "body: must be a JSON object", "body"});
  }
  Pause pause;
  for (const auto& [name, value] : body.items()) {
    std::string* into = nullptr;
    size_t max_bytes = max_field_bytes;
    if (name == "tenant") {
      into = &pause.tenant;
    } else if (name == "platform") {
      into = &pause.platform;
    } else if (name == "credential") {
      into = &pause.credential;
    } else if (name == "destination") {
      into = &pause.destination;
    } else if (name == "reason") {
      into = &pause.reason;
      max_bytes = kMaxPauseReasonBytes;
    } else {
      // Named only when it is short and plain: a key is client text.
      const bool plain = name.size() <= 64 && !MayNeedRedaction(name);
      return tl::unexpected(Invalid(plain ? name : std::string("body"),
                                    "unknown field; a pause takes tenant, platform, credential, "
                                    "destination and reason"));
    }
    if (!value.is_string()) {
      return tl::unexpected(Invalid(name, "must be a string"));
    }
    *into = value.get<std::string>();
    if (auto bad = CheckRequestText(name, *into, max_bytes)) {
      return tl::unexpected(*bad);
    }
  }
  if (!pause.platform.empty() && !ParsePlatform(pause.platform)) {
    return tl::unexpected(ApiError{400, "unknown_platform",
                                   "platform: not a platform (slack, discord, line or webhook)",
                                   "platform"});
  }
  if (pause.tenant.empty() && pause.platform.empty() && pause.credential.empty() &&
      pause.destination.empty()) {
    return tl::unexpected(ApiError{
        400, "invalid_request",
        "a pause names at least one of tenant, platform, credential and destination", "body"});
  }
  if (!pause.destination.empty()) {
    std::string shown = RedactDestination(pause.destination);
    if (shown != pause.destination) {
      pause.destination_sha256 = DestinationDigest(pause.destination);
    }
    pause.destination = std::move(shown);
  }
  return pause;
}

Result<Pause> PauseFromSetting(const std::string& key, const std::string& text) {
  const Status bad = Status::Corruption("stored setting " + key + " is not a pause");
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("id") || !j["id"].is_string() || !j.contains("created_ms") ||
      !j["created_ms"].is_number_integer()) {
    return bad;
  }
  json scope = json::object();
  for (const std::string_view field :
       {"tenant", "platform", "credential", "destination", "reason"}) {
    if (auto it = j.find(field); it != j.end()) {
      scope[std::string(field)] = *it;
    }
  }
  // The same checks as a request's (no field bounds but the reason's: the store's limit may
  // have been lowered since), so a record that did not come from one is refused.
  auto pause = PauseFromRequest(scope, SIZE_MAX);
  if (!pause) {
    return bad;
  }
  // The digest of a destination with a secret: the request's form holds the shown one only.
  pause->destination_sha256.clear();
  if (auto it = j.find("destination_sha256"); it != j.end()) {
    if (!it->is_string() || pause->destination.empty() || it->get<std::string>().size() != 64 ||
        !HexDecode(it->get<std::string>())) {
      return bad;
    }
    pause->destination_sha256 = it->get<std::string>();
  }
  pause->id = j["id"].get<std::string>();
  pause->created_ms = j["created_ms"].get<int64_t>();
  if (!IsPauseId(pause->id) || key != PauseKey(pause->id)) {
    return bad;
  }
  return std::move(*pause);
}

bool IsPauseId(std::string_view id) {
  if (id.size() != kIdHead.size() + kIdHexDigits || !id.starts_with(kIdHead)) {
    return false;
  }
  return std::all_of(id.begin() + static_cast<ptrdiff_t>(kIdHead.size()), id.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

void PauseBook::Put(Pause pause) {
  auto it = std::lower_bound(pauses_.begin(), pauses_.end(), pause.id,
                             [](const Pause& p, const std::string& id) { return p.id < id; });
  if (it != pauses_.end() && it->id == pause.id) {
    *it = std::move(pause);
    return;
  }
  pauses_.insert(it, std::move(pause));
}

bool PauseBook::Remove(const std::string& id) {
  auto it = std::lower_bound(pauses_.begin(), pauses_.end(), id,
                             [](const Pause& p, const std::string& key) { return p.id < key; });
  if (it == pauses_.end() || it->id != id) {
    return false;
  }
  pauses_.erase(it);
  return true;
}

void PauseBook::ReplaceAll(std::vector<Pause> pauses) {
  std::sort(pauses.begin(), pauses.end(),
            [](const Pause& a, const Pause& b) { return a.id < b.id; });
  pauses.erase(std::unique(pauses.begin(), pauses.end(),
                           [](const Pause& a, const Pause& b) { return a.id == b.id; }),
               pauses.end());
  pauses_ = std::move(pauses);
}

const Pause* PauseBook::Match(std::string_view tenant, std::string_view platform,
                              std::string_view credential, std::string_view destination) const {
  std::optional<std::string> shown, digest;
  for (const Pause& p : pauses_) {
    if ((!p.tenant.empty() && p.tenant != tenant) ||
        (!p.platform.empty() && p.platform != platform) ||
        (!p.credential.empty() && p.credential != credential)) {
      continue;
    }
    if (!p.destination_sha256.empty()) {
      if (!digest) {
        digest = DestinationDigest(destination);
      }
      if (p.destination_sha256 != *digest) {
        continue;
      }
    } else if (!p.destination.empty()) {
      if (!shown) {
        shown = RedactDestination(destination);
      }
      if (p.destination != *shown) {
        continue;
      }
    }
    return &p;
  }
  return nullptr;
}

const Pause* PauseBook::FindScope(const Pause& pause) const {
  for (const Pause& p : pauses_) {
    if (p.SameScope(pause)) {
      return &p;
    }
  }
  return nullptr;
}

const Pause* PauseBook::Find(const std::string& id) const {
  auto it = std::lower_bound(pauses_.begin(), pauses_.end(), id,
                             [](const Pause& p, const std::string& key) { return p.id < key; });
  return it != pauses_.end() && it->id == id ? &*it : nullptr;
}

std::vector<Pause> PauseBook::InCreationOrder() const {
  std::vector<Pause> out = pauses_;
  std::stable_sort(out.begin(), out.end(),
                   [](const Pause& a, const Pause& b) { return a.created_ms < b.created_ms; });
  return out;
}

bool PauseBook::Same(const std::vector<Pause>& other) const {
  if (other.size() != pauses_.size()) {
    return false;
  }
  for (const Pause& p : other) {
    const Pause* held = Find(p.id);
    if (held == nullptr || !held->SameScope(p) || held->reason != p.reason ||
        held->created_ms != p.created_ms) {
      return false;
    }
  }
  return true;
}

}  // namespace egress::service
