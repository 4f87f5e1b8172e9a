#pragma once

#include <string>
#include <string_view>
#include <utility>

namespace egress {

// The outcome of an operation that can fail, as in leveldb's status.h. Cheap to copy when ok().
// Codes say what a caller should do: kUnavailable is transient (retry later), kRejected is
// permanent (dead-letter), kCorruption and kIoError are storage faults.
class [[nodiscard]] Status {
 public:
  enum class Code {
    kOk = 0,
    kInvalidArgument,
    kNotFound,
    kAlreadyExists,
    kFailedPrecondition,
    kCorruption,
    kIoError,
    kUnavailable,
    kTimedOut,
    kRejected,
    kCancelled,
    kBusy,
  };

  Status() = default;

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string msg) {
    return {Code::kInvalidArgument, std::move(msg)};
  }
  static Status NotFound(std::string msg) { return {Code::kNotFound, std::move(msg)}; }
  static Status AlreadyExists(std::string msg) { return {Code::kAlreadyExists, std::move(msg)}; }
  // An operation not allowed in the current state (e.g. an illegal state transition).
  static Status FailedPrecondition(std::string msg) {
    return {Code::kFailedPrecondition, std::move(msg)};
  }
  static Status Corruption(std::string msg) { return {Code::kCorruption, std::move(msg)}; }
  static Status IoError(std::string msg) { return {Code::kIoError, std::move(msg)}; }
  static Status Unavailable(std::string msg) { return {Code::kUnavailable, std::move(msg)}; }
  static Status TimedOut(std::string msg) { return {Code::kTimedOut, std::move(msg)}; }
  static Status Rejected(std::string msg) { return {Code::kRejected, std::move(msg)}; }
  static Status Cancelled(std::string msg) { return {Code::kCancelled, std::move(msg)}; }
  // A resource held by someone else (e.g. the store is open in another process).
  static Status Busy(std::string msg) { return {Code::kBusy, std::move(msg)}; }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // "NotFound: delivery 01H..." or "OK".
  std::string ToString() const;

  // Drops the status on purpose; callers say why in a comment.
  void IgnoreError() const {}

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  Status(Code code, std::string msg) : code_(code), message_(std::move(msg)) {}

  Code code_ = Code::kOk;
  std::string message_;
};

std::string_view CodeName(Status::Code code);

}  // namespace egress
