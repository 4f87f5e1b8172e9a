#include "storage/rocks_schema.h"

#include <cstring>

#include <fmt/format.h>
#include <rocksdb/perf_level.h>

#include "dispatcher/base/saturating.h"

namespace egress::storage {
namespace {

class CounterMergeOperator final : public rocksdb::AssociativeMergeOperator {
 public:
  bool Merge(const rocksdb::Slice& /*key*/, const rocksdb::Slice* existing,
             const rocksdb::Slice& value, std::string* new_value,
             rocksdb::Logger* /*logger*/) const override {
    int64_t sum = existing == nullptr ? 0 : DecodeCounter({existing->data(), existing->size()});
    // Saturating: stored operands are read from disk and may be anything.
    sum = SatAdd(sum, DecodeCounter({value.data(), value.size()}));
    *new_value = EncodeCounterDelta(sum);
    return true;
  }
  const char* Name() const override { return "egress.CounterAdd"; }
};

}  // namespace

std::shared_ptr<rocksdb::MergeOperator> NewCounterMergeOperator() {
  return std::make_shared<CounterMergeOperator>();
}

std::string EncodeCounterDelta(int64_t delta) {
  std::string out(8, '\0');
  auto u = static_cast<uint64_t>(delta);
  for (int i = 0; i < 8; ++i) {
    out[i] = static_cast<char>((u >> (8 * i)) & 0xff);
  }
  return out;
}

int64_t DecodeCounter(std::string_view bytes) {
  if (bytes.size() != 8) {
    return 0;
  }
  uint64_t u = 0;
  for (int i = 7; i >= 0; --i) {
    u = (u << 8) | static_cast<uint8_t>(bytes[i]);
  }
  return static_cast<int64_t>(u);
}

Status FromRocks(const rocksdb::Status& s, std::string_view what) {
  if (s.ok()) {
    return Status::Ok();
  }
  std::string msg = fmt::format("{}: {}", what, s.ToString());
  if (s.IsNotFound()) {
    return Status::NotFound(std::move(msg));
  }
  if (s.IsCorruption()) {
    return Status::Corruption(std::move(msg));
  }
  if (s.IsBusy() || s.IsTryAgain() || s.IsNoSpace() || s.IsTimedOut() || s.IsIncomplete()) {
    return Status::Unavailable(std::move(msg));
  }
  if (s.IsInvalidArgument() || s.IsNotSupported()) {
    return Status::InvalidArgument(std::move(msg));
  }
  if (s.IsIOError() && std::strstr(s.getState() ? s.getState() : "", "lock") != nullptr) {
    return Status::Busy(std::move(msg));
  }
  return Status::IoError(std::move(msg));
}

rocksdb::WriteOptions SyncedWrite() {
  rocksdb::WriteOptions w;
  w.sync = true;
  return w;
}

void QuietPerfCounters() {
  thread_local bool quiet = false;
  if (!quiet) {
    rocksdb::SetPerfLevel(rocksdb::PerfLevel::kDisable);
    quiet = true;
  }
}

}  // namespace egress::storage
