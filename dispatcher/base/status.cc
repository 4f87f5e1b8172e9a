#include "dispatcher/base/status.h"

namespace egress {

std::string_view CodeName(Status::Code code) {
  switch (code) {
    case Status::Code::kOk:
      return "OK";
    case Status::Code::kInvalidArgument:
      return "InvalidArgument";
    case Status::Code::kNotFound:
      return "NotFound";
    case Status::Code::kAlreadyExists:
      return "AlreadyExists";
    case Status::Code::kFailedPrecondition:
      return "FailedPrecondition";
    case Status::Code::kCorruption:
      return "Corruption";
    case Status::Code::kIoError:
      return "IoError";
    case Status::Code::kUnavailable:
      return "Unavailable";
    case Status::Code::kTimedOut:
      return "TimedOut";
    case Status::Code::kRejected:
      return "Rejected";
    case Status::Code::kCancelled:
      return "Cancelled";
    case Status::Code::kBusy:
      return "Busy";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  if (ok()) {
    return "OK";
  }
  std::string out(CodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

}  // namespace egress
