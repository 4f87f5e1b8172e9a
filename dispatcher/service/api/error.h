#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "dispatcher/base/status.h"

namespace egress::service {

// One error envelope everywhere: {"error":"<code>","message":"...", ...fields}.
struct ApiError {
  int http_status = 400;
  std::string code;     // "invalid_request", "unknown_platform", "payload_too_large", ...
  std::string message;  // names the field and the problem
  std::string field;    // the offending field, when there is one

  nlohmann::json ToJson() const;
};

// Maps a store Status to an envelope: NotFound 404, InvalidArgument 400, FailedPrecondition
// 409, Corruption 500 (each with the status's message), Busy/Unavailable/IoError and the rest
// 503 storage_unavailable with a fixed message (the store's text may name files under the data
// directory).
ApiError FromStatus(const Status& status);

}  // namespace egress::service
