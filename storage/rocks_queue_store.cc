#include "storage/rocks_queue_store.h"

#include <algorithm>
#include <cstdarg>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <random>

#include <fmt/format.h>
#include <rocksdb/env.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/table.h>
#include <rocksdb/utilities/table_properties_collectors.h>
#include <sys/stat.h>

#include "storage/counter_moves.h"
#include "storage/delivery_codec.h"
#include "storage/index_keys.h"
#include "storage/rocks_info_log.h"
#include "storage/rocks_queue_store_internal.h"

namespace egress::storage {
namespace {

constexpr std::string_view kFormat3 = "relay-egress-store/3";
constexpr std::string_view kFormat2 = "relay-egress-store/2";

// Files an older build left with the default umask become the owner's only.
void TightenFileModes(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(path, ec)) {
    std::error_code file_ec;
    if (e.is_regular_file(file_ec)) {
      fs::permissions(e.path(), fs::perms::owner_read | fs::perms::owner_write,
                      fs::perm_options::replace, file_ec);
    }
  }
}

// A missing or empty directory may become a new store; anything else must already be one.
Result<bool> CheckDirectory(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    fs::create_directories(path, ec);
    if (ec) {
      return Status::IoError(
          fmt::format("cannot create store directory {}: {}", path, ec.message()));
    }
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::replace, ec);
    return true;
  }
  if (!fs::is_directory(path, ec)) {
    return Status::InvalidArgument(fmt::format("store path {} is not a directory", path));
  }
  // The store's directory holds secrets: only its owner may enter it.
  fs::permissions(path, fs::perms::owner_all, fs::perm_options::replace, ec);
  if (fs::is_empty(path, ec)) {
    return true;
  }
  // A generated secrets key written before the store's first open (secrets_key.h).
  if (bool only_key = true; fs::exists(fs::path(path) / kSecretsKeyFileName, ec)) {
    for (const fs::directory_entry& e : fs::directory_iterator(path, ec)) {
      only_key = only_key && e.path().filename() == kSecretsKeyFileName;
    }
    if (only_key && !ec) {
      return true;
    }
  }
  if (!fs::exists(fs::path(path) / "CURRENT", ec)) {
    return Status::InvalidArgument(fmt::format(
        "{} is not empty and holds no relay-egress store (no CURRENT file); refusing to use it",
        path));
  }
  return false;
}

rocksdb::Options MakeOptions(bool fresh, const RocksHooks& hooks) {
  rocksdb::Options o;
  o.create_if_missing = fresh;
  o.error_if_exists = fresh;
  o.create_missing_column_families = true;
  o.paranoid_checks = true;
  o.statistics = hooks.stats;
  o.max_background_jobs = 2;
  o.keep_log_file_num = 4;
  // A write-ahead log file can go only once every family with entries in it has flushed. The
  // counters and the small indexes fill their memtables slowly, so without a cap their oldest
  // entries kept every log alive until RocksDB's default (4 times the memtables of all eight
  // families, 4 GiB) forced a flush: the store grew by the whole write volume for days
  // (bench/README.md, "Retention"). At the cap, the families holding the oldest log flush.
  // The log left behind by a crash is replayed before the store opens: at half the memtables'
  // budget (16 MiB by default; 32 MiB replayed in 0.27 s) rather than 128 MiB (0.95 s of the
  // 1.2 s from kill -9 to ready at a million queued; bench/README.md, section 14).
  o.max_total_wal_size = 128 << 20;
  if (hooks.write_buffers) {
    o.write_buffer_manager = hooks.write_buffers;
    o.max_total_wal_size = std::max<uint64_t>(hooks.write_buffers->buffer_size() / 2, 8 << 20);
  }
  // One thread fills the memtables for a write group, so the insert hints below are used (RocksDB
  // ignores them for concurrent inserts); our write groups are a few large batches anyway.
  o.allow_concurrent_memtable_write = false;
  if (hooks.info_log) {
    o.info_log = hooks.info_log;
  }
  if (hooks.health) {
    // The store recovers from background errors itself (QueueStore::Recover): RocksDB's own
    // retries of a failed write-ahead-log write would race with it (a manual Resume is refused
    // while one runs).
    o.listeners.push_back(hooks.health);
    o.max_bgerror_resume_count = 0;
  }
  return o;
}

Status OpenError(const Status& s, const std::string& path) {
  if (s.code() == Status::Code::kBusy) {
    return Status::Busy(fmt::format(
        "store at {} is in use by another process (its LOCK is held): {}", path, s.message()));
  }
  if (s.code() == Status::Code::kCorruption) {
    return Status::Corruption(fmt::format(
        "store at {} is corrupt and was not opened; nothing was changed: {}", path, s.message()));
  }
  return s;
}

// The destination key of a `dest` index key (everything before the first \0): inserts for one
// destination arrive in id order, so the memtable keeps an insert hint per destination.
class UpToNulTransform final : public rocksdb::SliceTransform {
 public:
  const char* Name() const override { return "egress.UpToNul"; }
  rocksdb::Slice Transform(const rocksdb::Slice& key) const override {
    const void* nul = std::memchr(key.data(), '\0', key.size());
    return rocksdb::Slice(key.data(),
                          nul == nullptr ? key.size() : static_cast<const char*>(nul) - key.data());
  }
  bool InDomain(const rocksdb::Slice& /*key*/) const override { return true; }
};
std::shared_ptr<const rocksdb::SliceTransform> NewUpToNulTransform() {
  return std::make_shared<UpToNulTransform>();
}

// Drops RocksDB's informational log: a read-only open must not create or rotate the LOG file
// the owner of the store is writing.
class NullLogger final : public rocksdb::Logger {
 public:
  using rocksdb::Logger::Logv;
  void Logv(const char* /*format*/, va_list /*ap*/) override {}
};

}  // namespace

Result<OpenedDb> OpenRocksDb(const std::string& path, bool fresh, bool read_only,
                             const RocksHooks& hooks) {
  rocksdb::Options db_options = MakeOptions(fresh, hooks);
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  for (const FamilySpec& spec : kFamilies) {
    rocksdb::ColumnFamilyOptions cf_options(db_options);
    if (spec.family == Family::kMeta) {
      cf_options.merge_operator = NewCounterMergeOperator();
    }
    // Memtable insert hints: an insert starts its search where the last one with the same prefix
    // went, not at the top of the skip list. Keys of one index mostly grow (ids and times), so
    // this saves most comparisons: per destination for `dest`, per first byte (the state, or the
    // top of a time or id) elsewhere. Idempotency keys are random.
    if (spec.family == Family::kDest) {
      cf_options.memtable_insert_with_hint_prefix_extractor = NewUpToNulTransform();
    } else if (spec.family == Family::kMeta) {
      // A hint per key: a counter's next merge operand sorts just before its last one (same
      // key, newer sequence), where that key's hint points. Without it each merge searched the
      // whole memtable, which holds every operand since the last flush (12k instructions each).
      cf_options.memtable_insert_with_hint_prefix_extractor.reset(rocksdb::NewNoopTransform());
    } else if (spec.family != Family::kIdem) {
      cf_options.memtable_insert_with_hint_prefix_extractor.reset(
          rocksdb::NewFixedPrefixTransform(1));
    }
    // Retention deletes the oldest keys of these families (docs/storage.md, "Retention"). A
    // table file with at least 16Ki deletions in some 128Ki consecutive entries is marked, and
    // RocksDB compacts marked files first, so the deleted records' space comes back and scans
    // stop stepping over their deletion markers. Measured against relying on size-triggered
    // compaction alone and against CompactRange after each pass (bench/README.md, "Retention").
    if (spec.family == Family::kJobs || spec.family == Family::kState ||
        spec.family == Family::kDone || spec.family == Family::kIdem) {
      cf_options.table_properties_collector_factories.emplace_back(
          rocksdb::NewCompactOnDeletionCollectorFactory(128 * 1024, 16 * 1024));
    }
    families.emplace_back(spec.name, cf_options);
  }
  if (hooks.block_cache) {
    rocksdb::BlockBasedTableOptions table;
    table.block_cache = hooks.block_cache;
    table.no_block_cache = hooks.block_cache->GetCapacity() == 0;
    std::shared_ptr<rocksdb::TableFactory> factory(rocksdb::NewBlockBasedTableFactory(table));
    for (rocksdb::ColumnFamilyDescriptor& family : families) {
      family.options.table_factory = factory;
    }
  }
  OpenedDb opened;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status rs =
      read_only ? rocksdb::DB::OpenForReadOnly(db_options, path, families, &opened.handles, &raw)
                : rocksdb::DB::Open(db_options, path, families, &opened.handles, &raw);
  opened.db.reset(raw);
  if (!rs.ok()) {
    if (hooks.health) {
      hooks.health->Fail(HealthReasonOf(rs), "reopen", rs.ToString());
    }
    return OpenError(FromRocks(rs, "open"), path);
  }
  return opened;
}

namespace {

// Opens the database and builds the store over it: read-write with our LOG and the health
// listener, or read-only with a null logger.
Result<std::unique_ptr<RocksQueueStore>> OpenStore(const StoreOptions& options, bool fresh,
                                                   bool read_only, int64_t now_ms) {
  RocksHooks hooks;
  hooks.stats = rocksdb::CreateDBStatistics();
  hooks.stats->set_stats_level(rocksdb::StatsLevel::kExceptTimers);
  hooks.block_cache = rocksdb::NewLRUCache(options.block_cache_bytes);
  if (options.memtable_bytes > 0) {
    hooks.write_buffers = std::make_shared<rocksdb::WriteBufferManager>(options.memtable_bytes);
  }
  if (read_only) {
    hooks.info_log = std::make_shared<NullLogger>();
  } else {
    auto log = OpenStoreInfoLog(options.path, now_ms);
    if (!log) {
      return log.error();
    }
    hooks.info_log = std::move(*log);
    hooks.health = std::make_shared<HealthListener>();
  }
  auto opened = OpenRocksDb(options.path, fresh, read_only, hooks);
  if (!opened) {
    return opened.error();
  }
  std::string newest_id;
  {
    std::unique_ptr<rocksdb::Iterator> it(opened->db->NewIterator(
        rocksdb::ReadOptions(), opened->handles[static_cast<size_t>(Family::kJobs)]));
    it->SeekToLast();
    if (it->Valid()) {
      newest_id = it->key().ToString();
    }
  }
  return std::make_unique<RocksQueueStore>(options, std::move(*opened), std::move(hooks),
                                           std::random_device{}(), newest_id, read_only);
}

}  // namespace

Result<std::unique_ptr<QueueStore>> OpenRocksQueueStore(const StoreOptions& options,
                                                        int64_t now_ms) {
  // Every file RocksDB writes from now on (tables, logs, the WAL) is the owner's only: the
  // process umask is tightened to at least 077 and stays so (RocksDB has no file mode option).
  const mode_t old_mask = ::umask(077);
  ::umask(old_mask | 077);
  Result<bool> fresh = CheckDirectory(options.path);
  if (!fresh) {
    return fresh.error();
  }
  auto store = OpenStore(options, *fresh, false, now_ms);
  if (!store) {
    return store.error();
  }
  if (Status s = (*store)->CheckFormat(*fresh, false); !s.ok()) {
    return s;
  }
  // Settings first: a wrong key is named by the first setting that does not open.
  if (Status s = (*store)->SealSettings(); !s.ok()) {
    return s;
  }
  Result<size_t> sealed = (*store)->SealDestinations();
  if (!sealed) {
    return sealed.error();
  }
  if (*sealed > 0) {
    // RocksDB's MANIFEST logs the key range of every table it added, so the plaintext keys of the
    // tables the seal replaced stay there until a new MANIFEST is written: an open writes one
    // (and drops the old).
    store->reset();
    store = OpenStore(options, false, false, now_ms);
    if (!store) {
      return store.error();
    }
  }
  if (Status s = (*store)->LoadCounters(); !s.ok()) {
    return s;
  }
  if (Result<size_t> n = (*store)->RecoverInFlight(now_ms); !n) {
    return n.error();
  }
  TightenFileModes(options.path);
  return std::unique_ptr<QueueStore>(std::move(*store));
}

Result<std::unique_ptr<QueueStore>> OpenRocksQueueStoreReadOnly(const StoreOptions& options) {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::path(options.path) / "CURRENT", ec)) {
    return Status::NotFound(fmt::format("no store at '{}'", options.path));
  }
  // The owner may flush or compact while we read its file list; a file that vanished under us
  // shows as IoError or NotFound, and a second look sees the new list.
  constexpr int kAttempts = 3;
  auto store = OpenStore(options, false, true, 0);
  for (int i = 1; i < kAttempts && !store &&
                  (store.error().code() == Status::Code::kIoError ||
                   store.error().code() == Status::Code::kNotFound);
       ++i) {
    store = OpenStore(options, false, true, 0);
  }
  if (!store) {
    return store.error();
  }
  if (Status s = (*store)->CheckFormat(false, true); !s.ok()) {
    return s;
  }
  if (Status s = (*store)->LoadCounters(); !s.ok()) {
    return s;
  }
  return std::unique_ptr<QueueStore>(std::move(*store));
}

RocksQueueStore::RocksQueueStore(StoreOptions options, OpenedDb opened, RocksHooks hooks,
                                 uint64_t id_seed, const std::string& newest_id, bool read_only)
    : options_(std::move(options)),
      seal_(options_.secrets_key),
      hooks_(std::move(hooks)),
      db_(std::move(opened.db)),
      handles_(std::move(opened.handles)),
      ids_(id_seed, newest_id),
      records_(read_only ? 0 : options_.record_cache_bytes),
      read_only_(read_only) {}

RocksQueueStore::~RocksQueueStore() {
  // Errors on this path have nowhere to go; Close() reports them to callers who ask.
  Close().IgnoreError();
}

Status RocksQueueStore::Close() {
  std::unique_lock<std::shared_mutex> lock(db_mu_);
  if (closed_) {
    return Status::Ok();
  }
  closed_ = true;
  leases_.Clear();  // in memory only: a lease ends with the process (recovery: docs/storage.md)
  if (db_ == nullptr) {
    return Status::Ok();  // a reopen failed: nothing is open
  }
  Status first;
  for (rocksdb::ColumnFamilyHandle* h : handles_) {
    Status s = FromRocks(db_->DestroyColumnFamilyHandle(h), "close column family");
    if (first.ok() && !s.ok()) {
      first = s;
    }
  }
  handles_.clear();
  Status s = FromRocks(db_->Close(), "close");
  db_.reset();
  return first.ok() ? s : first;
}

Status RocksQueueStore::CheckOpen() const {
  if (closed_) {
    return Status::FailedPrecondition("store is closed");
  }
  if (db_ == nullptr) {
    return Status::Unavailable("store is being reopened after a write fault; retry later");
  }
  return Status::Ok();
}

Status RocksQueueStore::CheckWritable() const {
  if (read_only_ && !closed_) {
    return Status::FailedPrecondition("store opened read-only");
  }
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  if (hooks_.health && !hooks_.health->healthy()) {
    const StoreHealth h = hooks_.health->Get();
    return Status::Unavailable(
        fmt::format("store refuses writes after a failed {} ({}); retrying", h.during, h.reason));
  }
  return Status::Ok();
}

Status RocksQueueStore::CheckFormat(bool fresh, bool read_only) {
  std::string value;
  rocksdb::Status rs =
      db_->Get(rocksdb::ReadOptions(), cf(Family::kMeta), std::string(kFormatKey), &value);
  if (rs.IsNotFound() && fresh) {
    return FromRocks(db_->Put(SyncedWrite(), cf(Family::kMeta), std::string(kFormatKey),
                              std::string(kFormatValue)),
                     "write format marker");
  }
  if (rs.IsNotFound()) {
    return Status::InvalidArgument(fmt::format(
        "{} is a RocksDB database but not a relay-egress store (no format marker)", options_.path));
  }
  if (!rs.ok()) {
    return FromRocks(rs, "read format marker");
  }
  // Readers never look at the due index or the retention index, so formats 2 to 4 read as 5
  // but for the stored bytes, which they do not count; a writer migrates them, one format at a
  // time.
  if (value == kFormat2 || value == kFormat3 || value == kFormat4) {
    if (read_only) {
      counts_stored_bytes_ = false;
      return Status::Ok();
    }
    if (value == kFormat2) {
      if (Status s = MigrateFromFormat2(); !s.ok()) {
        return s;
      }
    }
    if (value != kFormat4) {
      if (Status s = MigrateFromFormat3(); !s.ok()) {
        return s;
      }
    }
    return MigrateFromFormat4();
  }
  if (value != kFormatValue) {
    return Status::FailedPrecondition(fmt::format(
        "store at {} has format '{}', this build reads '{}'", options_.path, value, kFormatValue));
  }
  return Status::Ok();
}

Result<size_t> RocksQueueStore::RecoverInFlight(int64_t now_ms) {
  const std::string prefix = StateKey(DeliveryState::kInFlight, "");
  std::vector<std::string> ids;
  std::unique_ptr<rocksdb::Iterator> it(
      db_->NewIterator(rocksdb::ReadOptions(), cf(Family::kState)));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    ids.push_back(it->key().ToString().substr(prefix.size()));
  }
  if (Status s = FromRocks(it->status(), "scan in-flight deliveries"); !s.ok()) {
    return s;
  }
  StateChange change{.to = DeliveryState::kQueued, .at_ms = now_ms};
  change.expect = DeliveryState::kInFlight;
  for (const std::string& id : ids) {
    if (Result<Delivery> d = Apply(id, change); !d) {
      return d.error();
    }
  }
  return ids.size();
}

std::mutex& RocksQueueStore::IdStripe(std::string_view id) {
  return id_stripes_[std::hash<std::string_view>{}(id) % kStripes];
}

std::mutex& RocksQueueStore::IdemStripe(std::string_view tenant, std::string_view key) {
  return idem_stripes_[(std::hash<std::string_view>{}(tenant)*31 +
                        std::hash<std::string_view>{}(key)) %
                       kStripes];
}

Result<Delivery> RocksQueueStore::ReadCurrent(std::string_view id, uint64_t* stored_bytes) {
  if (std::optional<Lease> lease = leases_.Find(id)) {
    if (stored_bytes != nullptr) {
      *stored_bytes = lease->disk_bytes;
    }
    return std::move(lease->delivery);
  }
  return Read(id, stored_bytes);
}

Result<std::string> RocksQueueStore::ReadBytes(std::string_view id) {
  std::optional<std::string> value = records_.Find(id);
  if (value) {
    return std::move(*value);
  }
  QuietPerfCounters();
  std::string bytes;
  rocksdb::Status rs = db_->Get(rocksdb::ReadOptions(), cf(Family::kJobs),
                                rocksdb::Slice(id.data(), id.size()), &bytes);
  if (rs.IsNotFound()) {
    return Status::NotFound(fmt::format("delivery {} not found", id));
  }
  if (!rs.ok()) {
    return FromRocks(rs, fmt::format("read delivery {}", id));
  }
  return bytes;
}

Result<Delivery> RocksQueueStore::Read(std::string_view id, uint64_t* stored_bytes) {
  Result<std::string> value = ReadBytes(id);
  if (!value) {
    return value.error();
  }
  if (stored_bytes != nullptr) {
    *stored_bytes = StoredRecordBytes(id, *value);
  }
  Result<Delivery> d = Decode(*value);
  if (!d) {
    return Status::Corruption(fmt::format("delivery {}: {}", id, d.error().message()));
  }
  return d;
}

Result<Delivery> RocksQueueStore::Decode(std::string_view bytes) const {
  Result<Delivery> d = DecodeDelivery(bytes);
  if (!d) {
    return d;
  }
  Result<std::string> destination = seal_.Open(d->destination);
  if (!destination) {
    return destination.error();
  }
  d->destination = std::move(*destination);
  return d;
}

std::vector<IndexEntry> IndexEntriesOf(const Delivery& d, std::string_view dest) {
  std::vector<IndexEntry> out;
  out.reserve(3);
  out.push_back({Family::kState, StateKey(d.state, d.id), {}});
  if (!IsTerminal(d.state)) {
    out.push_back({Family::kDest, DestIndexKey(dest, d.id), {}});
  }
  if (d.state == DeliveryState::kDeferred) {  // queued: due when queued (format 3)
    out.push_back({Family::kDue, DueKey(d.next_attempt_ms, d.id), {}});
  }
  if (IsTerminal(d.state)) {  // the retention index (format 4)
    out.push_back({Family::kDone, DoneKey(d.state, d.finished_ms, d.id), {}});
    if (!d.idempotency_key.empty()) {
      out.push_back({Family::kDone, IdemExpiryKey(d.finished_ms, d.id),
                     IdemKey(d.tenant, d.idempotency_key)});
    }
  }
  return out;
}

namespace {

// Only calls RocksDB: an instrumented frame inside WriteBatchToRocks, so that ThreadSanitizer's
// stacks (built from instrumented calls only) name WriteBatchToRocks.
[[gnu::noinline]] rocksdb::Status CallRocksWrite(rocksdb::DB& db,
                                                 const rocksdb::WriteOptions& options,
                                                 rocksdb::WriteBatch& batch) {
  QuietPerfCounters();
  return db.Write(options, &batch);
}

}  // namespace

// Every batch the store commits goes through here, and nothing else happens here: the frame
// tests/tsan.supp names. RocksDB joins concurrent writers into a group whose leader copies the
// others' batches and fills the memtable, handing them over with atomics ThreadSanitizer cannot
// see (Debian's librocksdb is not instrumented), so it reports those copies as races.
[[gnu::noinline]] rocksdb::Status WriteBatchToRocks(rocksdb::DB& db,
                                                    const rocksdb::WriteOptions& options,
                                                    rocksdb::WriteBatch& batch) {
  return CallRocksWrite(db, options, batch);
}

uint64_t RocksQueueStore::Stage(PendingWrite& w, const Delivery* before, const Delivery* after,
                                uint64_t before_bytes) {
  const Delivery& any = after != nullptr ? *after : *before;
  // Index and counter keys and the record hold the destination as stored (destination_seal.h).
  const std::string stored_destination = seal_.Stored(any.destination);
  const std::string dest =
      DestinationKeyOf(any.platform, any.tenant, any.credential, stored_destination);
  const std::vector<IndexEntry> old_entries =
      before ? IndexEntriesOf(*before, dest) : std::vector<IndexEntry>();
  const std::vector<IndexEntry> new_entries =
      after ? IndexEntriesOf(*after, dest) : std::vector<IndexEntry>();
  auto has = [](const std::vector<IndexEntry>& v, const IndexEntry& e) {
    return std::find(v.begin(), v.end(), e) != v.end();
  };
  for (const IndexEntry& e : old_entries) {
    if (!has(new_entries, e)) {
      w.Delete(e.family, e.key);
    }
  }
  for (const IndexEntry& e : new_entries) {
    if (!has(old_entries, e)) {
      w.Put(e.family, e.key, e.value);
    }
  }
  AddCounterMoves(before, after, dest, w.counters);
  AddQuotaMoves(before, after, w.quota);
  uint64_t after_bytes = 0;
  if (after) {
    std::string record = EncodeDelivery(*after, stored_destination);
    after_bytes = StoredRecordBytes(after->id, record);
    w.Put(Family::kJobs, after->id, std::move(record));
    w.records.emplace_back(after->id, IsWaiting(after->state)
                                          ? std::optional<size_t>(w.ops.size() - 1)
                                          : std::nullopt);
  } else if (before) {
    // The idempotency key is the caller's (StageReleaseIdem): it may name a newer delivery.
    w.records.emplace_back(before->id, std::nullopt);
    w.Delete(Family::kJobs, before->id);
  }
  if (after_bytes != before_bytes) {
    w.counters.Add(StoredBytesKey(any.tenant),
                   static_cast<int64_t>(after_bytes) - static_cast<int64_t>(before_bytes));
  }
  return after_bytes;
}

void RocksQueueStore::StageInMemory(PendingWrite& w, const Delivery& from,
                                    const Delivery& to) const {
  AddCounterMoves(
      &from, &to,
      DestinationKeyOf(to.platform, to.tenant, to.credential, seal_.Stored(to.destination)),
      w.memory_only);
}

Status RocksQueueStore::Commit(const rocksdb::WriteOptions& options, PendingWrite& w,
                               std::string_view what) {
  using Op = PendingWrite::Op;
  for (const auto& [key, delta] : w.counters.deltas()) {
    if (delta != 0) {
      w.ops.push_back({Family::kMeta, PendingWrite::Kind::kMerge, key, EncodeCounterDelta(delta)});
    }
  }
  for (const auto& [key, delta] : w.quota.deltas()) {
    if (delta != 0) {
      w.ops.push_back({Family::kMeta, PendingWrite::Kind::kMerge, key, EncodeCounterDelta(delta)});
    }
  }
  if (!w.ops.empty()) {
    // Sorts positions, not the operations (each holds two strings); ties keep their order.
    std::vector<uint32_t> order(w.ops.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&ops = w.ops](uint32_t a, uint32_t b) {
      const Op& x = ops[a];
      const Op& y = ops[b];
      if (x.family != y.family) {
        return x.family < y.family;
      }
      const int c = x.key.compare(y.key);
      return c != 0 ? c < 0 : a < b;
    });
    rocksdb::WriteBatch batch;
    for (uint32_t i : order) {
      const Op& op = w.ops[i];
      switch (op.kind) {
        case PendingWrite::Kind::kPut:
          batch.Put(cf(op.family), op.key, op.value);
          break;
        case PendingWrite::Kind::kDelete:
          batch.Delete(cf(op.family), op.key);
          break;
        case PendingWrite::Kind::kMerge:
          batch.Merge(cf(op.family), op.key, op.value);
          break;
      }
    }
    if (Status s = FromRocks(WriteBatchToRocks(*db_, options, batch), what); !s.ok()) {
      return s;
    }
  }
  counters_.Apply({&w.counters, &w.memory_only});
  quotas_.Apply(w.quota);
  if (!w.leases.empty()) {
    leases_.Update(std::move(w.leases));
  }
  if (!w.records.empty()) {
    std::vector<std::pair<std::string, std::optional<std::string>>> records;
    records.reserve(w.records.size());
    for (auto& [id, op] : w.records) {
      records.emplace_back(
          std::move(id),
          op ? std::optional<std::string>(std::move(w.ops[*op].value)) : std::nullopt);
    }
    records_.Update(std::move(records));
  }
  return Status::Ok();
}

StoreStats RocksQueueStore::Stats() {
  StoreStats s;
  s.wal_syncs = hooks_.stats->getTickerCount(rocksdb::WAL_FILE_SYNCED);
  s.writes = hooks_.stats->getTickerCount(rocksdb::WRITE_DONE_BY_SELF) +
             hooks_.stats->getTickerCount(rocksdb::WRITE_DONE_BY_OTHER);
  namespace fs = std::filesystem;
  std::error_code ec;
  for (fs::directory_iterator it(options_.path, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code size_ec;
    const uintmax_t size = it->file_size(size_ec);
    if (!size_ec) {
      s.disk_bytes += size;
    }
  }
  return s;
}

StoreMemory RocksQueueStore::MemoryUse() {
  StoreMemory m;
  m.block_cache = hooks_.block_cache ? hooks_.block_cache->GetUsage() : 0;
  m.record_cache = records_.bytes();
  auto lock = UseDb();
  if (db_) {
    uint64_t v = 0;
    if (db_->GetAggregatedIntProperty("rocksdb.size-all-mem-tables", &v)) {
      m.memtables = v;
    }
    if (db_->GetAggregatedIntProperty("rocksdb.estimate-table-readers-mem", &v)) {
      m.table_readers = v;
    }
  }
  return m;
}

Status RocksQueueStore::MigrateFromFormat2() {
  // Format 2 also indexed queued deliveries by due time: drop every due entry whose record is
  // not deferred at that time, and write the new marker in the same batch.
  rocksdb::WriteBatch batch;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf(Family::kDue)));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    int64_t due_ms = 0;
    std::string_view id;
    const std::string_view key(it->key().data(), it->key().size());
    if (ParseDueKey(key, due_ms, id)) {
      Result<Delivery> d = Read(id);
      if (!d && d.error().code() != Status::Code::kNotFound) {
        return d.error();
      }
      if (d && d->state == DeliveryState::kDeferred && d->next_attempt_ms == due_ms) {
        continue;
      }
    }
    batch.Delete(cf(Family::kDue), it->key());
  }
  if (Status s = FromRocks(it->status(), "scan due index (format 2 migration)"); !s.ok()) {
    return s;
  }
  batch.Put(cf(Family::kMeta), std::string(kFormatKey), std::string(kFormat3));
  return FromRocks(WriteBatchToRocks(*db_, SyncedWrite(), batch),
                   "migrate store from format 2 to 3");
}

}  // namespace egress::storage
