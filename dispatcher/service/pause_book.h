#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

#include "dispatcher/base/result.h"
#include "dispatcher/base/status.h"
#include "dispatcher/service/api/error.h"

namespace egress::service {

// An operator's pause (docs/api.md, "Pauses"): the destinations it names send nothing until it is
// deleted; their deliveries wait, deferred with reason paused. Each of the four scope fields left
// empty matches anything; at least one is set. `destination` is kept as an operator reads it
// (RedactDestination), so a pause stores no secret a webhook URL may carry. When the destination
// given had a part that form hides (a Slack incoming webhook's path, a token in a query), its
// SHA-256 is kept too and only that exact destination matches; a destination given in its shown
// form matches every destination shown the same.
struct Pause {
  std::string id;  // "pause_" and 16 hex digits
  std::string tenant, platform, credential, destination;
  std::string destination_sha256;  // 64 lowercase hex digits, or empty (see above)
  std::string reason;              // the operator's note; may be empty
  int64_t created_ms = 0;

  // Whether the scope fields are the same (the reason and time aside).
  bool SameScope(const Pause& other) const {
    return tenant == other.tenant && platform == other.platform && credential == other.credential &&
           destination == other.destination && destination_sha256 == other.destination_sha256;
  }
};

// Its JSON, as answered and as stored (the setting PauseKey(id)): the set fields only, plus
// "created" (RFC 3339) and "created_ms".
nlohmann::json PauseToJson(const Pause& pause);

// The bounds of a pause's fields: `max_field_bytes` for the scope fields (the store's
// max_field_bytes, as intake takes them), kMaxPauseReasonBytes for the reason.
inline constexpr size_t kMaxPauseReasonBytes = 1024;

// A POST /api/admin/pauses body, {"tenant"?, "platform"?, "credential"?, "destination"?,
// "reason"?}: a Pause without id and time, or a 400 naming the first field that is not a string,
// has a control character or is too long, an unknown platform, an unknown field, or a body that
// sets none of the four scope fields.
tl::expected<Pause, ApiError> PauseFromRequest(const nlohmann::json& body, size_t max_field_bytes);

// A stored pause (PauseToJson's text under PauseKey(id)); Corruption naming the key (never the
// text) when it is not one.
Result<Pause> PauseFromSetting(const std::string& key, const std::string& text);

inline constexpr std::string_view kPausesPrefix = "pauses/";
inline std::string PauseKey(const std::string& id) { return std::string(kPausesPrefix) + id; }
// Whether `id` has the shape of a pause id (a path segment names nothing else).
bool IsPauseId(std::string_view id);

// The pauses in force on this node, in id order (ids are random; the list shows creation order).
// A value type: the service holds one, replaces it whole from the store (ReplaceAll) or changes
// one pause (Put, Remove), and the delivery loop asks it which pause holds a destination.
class PauseBook {
 public:
  // The most pauses the API makes (POST answers 409 at it): each costs every destination a
  // comparison when pauses change. The book itself holds whatever the store holds (two nodes
  // may each make the last one), so no stored pause is ever out of force or out of reach.
  static constexpr size_t kMaxPauses = 1000;

  // Adds or replaces the pause with its id.
  void Put(Pause pause);
  // False when no pause has `id`.
  bool Remove(const std::string& id);
  void ReplaceAll(std::vector<Pause> pauses);

  // A pause with the same scope as `pause`, if one is in force.
  const Pause* FindScope(const Pause& pause) const;
  const Pause* Find(const std::string& id) const;

  // The first pause (in id order) that holds the destination, or null. The destination's shown
  // form and digest are computed only when a pause names a destination and the other fields
  // matched, at most once a call.
  const Pause* Match(std::string_view tenant, std::string_view platform,
                     std::string_view credential, std::string_view destination) const;

  // In creation order (by created_ms, then id).
  std::vector<Pause> InCreationOrder() const;
  const std::vector<Pause>& all() const { return pauses_; }  // id order
  bool empty() const { return pauses_.empty(); }
  size_t size() const { return pauses_.size(); }
  // Whether `other` holds the same pauses, reasons and times included.
  bool Same(const std::vector<Pause>& other) const;

 private:
  std::vector<Pause> pauses_;  // by id
};

}  // namespace egress::service
