#include "dispatcher/service/api/error.h"

namespace egress::service {

nlohmann::json ApiError::ToJson() const {
  nlohmann::json j = {{"error", code}, {"message", message}};
  if (!field.empty()) {
    j["field"] = field;
  }
  return j;
}

ApiError FromStatus(const Status& status) {
  switch (status.code()) {
    case Status::Code::kNotFound:
      return {404, "not_found", status.message()};
    case Status::Code::kInvalidArgument:
      return {400, "invalid_request", status.message()};
    case Status::Code::kFailedPrecondition:
    case Status::Code::kAlreadyExists:
      return {409, "conflict", status.message()};
    case Status::Code::kCorruption:
      return {500, "storage_corrupt", status.message()};
    default:
      // The store's text may name files under the data directory: it stays out of answers.
      return {503, "storage_unavailable", "the store cannot serve this now; retry later"};
  }
}

}  // namespace egress::service
