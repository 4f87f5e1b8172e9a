#include "storage/rocks_health_listener.h"

namespace egress::storage {
namespace {

std::string DuringOf(rocksdb::BackgroundErrorReason reason) {
  switch (reason) {
    case rocksdb::BackgroundErrorReason::kFlush:
    case rocksdb::BackgroundErrorReason::kFlushNoWAL:
      return "flush";
    case rocksdb::BackgroundErrorReason::kCompaction:
      return "compaction";
    case rocksdb::BackgroundErrorReason::kWriteCallback:
      return "write";
    case rocksdb::BackgroundErrorReason::kMemTable:
      return "memtable";
    case rocksdb::BackgroundErrorReason::kManifestWrite:
    case rocksdb::BackgroundErrorReason::kManifestWriteNoWAL:
      return "manifest";
  }
  return "background";
}

// Whether RocksDB stops writing after `error`. It passes the severity it decided, except for a
// retryable I/O error (not a full disk), which it reports before deciding: that one is soft
// during a compaction or a flush or manifest write without a write-ahead log, hard otherwise
// (ErrorHandler::SetBGError, RocksDB 7.8). With paranoid_checks, which the store sets, every
// other error arrives with its severity.
bool StopsWrites(rocksdb::BackgroundErrorReason reason, const rocksdb::Status& error) {
  if (error.severity() != rocksdb::Status::Severity::kNoError) {
    return error.severity() >= rocksdb::Status::Severity::kHardError;
  }
  return reason != rocksdb::BackgroundErrorReason::kCompaction &&
         reason != rocksdb::BackgroundErrorReason::kFlushNoWAL &&
         reason != rocksdb::BackgroundErrorReason::kManifestWriteNoWAL;
}

}  // namespace

std::string HealthReasonOf(const rocksdb::Status& s) {
  if (s.IsNoSpace()) {
    return "no_space";
  }
  if (s.subcode() == rocksdb::Status::SubCode::kSpaceLimit) {
    return "space_limit";
  }
  if (s.IsCorruption()) {
    return "corruption";
  }
  if (s.IsIOError()) {
    return "io_error";
  }
  return "error";
}

void HealthListener::OnBackgroundError(rocksdb::BackgroundErrorReason reason,
                                       rocksdb::Status* error) {
  if (error == nullptr || error->ok() || !StopsWrites(reason, *error)) {
    return;  // RocksDB goes on writing
  }
  Fail(HealthReasonOf(*error), DuringOf(reason), error->ToString());
}

void HealthListener::OnErrorRecoveryBegin(rocksdb::BackgroundErrorReason /*reason*/,
                                          rocksdb::Status /*error*/, bool* auto_recovery) {
  *auto_recovery = false;
}

void HealthListener::Fail(std::string reason, std::string during, std::string detail) {
  std::lock_guard<std::mutex> lock(mu_);
  ++generation_;
  health_ = {.healthy = false,
             .reason = std::move(reason),
             .during = std::move(during),
             .detail = std::move(detail)};
  healthy_.store(false, std::memory_order_release);
}

void HealthListener::Clear(uint64_t since) {
  std::lock_guard<std::mutex> lock(mu_);
  if (generation_ == since) {
    health_ = StoreHealth{};
    healthy_.store(true, std::memory_order_release);
  }
}

StoreHealth HealthListener::Get() const {
  std::lock_guard<std::mutex> lock(mu_);
  return health_;
}

uint64_t HealthListener::generation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return generation_;
}

}  // namespace egress::storage
