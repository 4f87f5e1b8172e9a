#include "tests/storage/queue_store_contract.h"

#include <utility>

#include "storage/rocks_queue_store.h"
#include "storage/rocks_schema.h"
#include "tests/support/raw_store.h"
#include "tests/support/store_audit.h"
#include "tests/support/temp_dir.h"
#ifdef EGRESS_CONTRACT_KINDS_POSTGRES
#include "tests/storage/pg_store_site.h"
#endif

namespace egress::storage {
namespace {

[[maybe_unused]] StoreKind RocksStoreKind() {
  return StoreKind{.name = "RocksDB", .new_site = []() -> Result<std::unique_ptr<StoreSite>> {
                     return std::make_unique<RocksStoreSite>();
                   }};
}

}  // namespace

// The unit binary runs the suites over the RocksDB store; the integration binary compiles the
// same suites with EGRESS_CONTRACT_KINDS_POSTGRES (tests/CMakeLists.txt) and runs them over the
// PostgreSQL store, which needs a server process.
std::vector<StoreKind> ContractStoreKinds() {
#ifdef EGRESS_CONTRACT_KINDS_POSTGRES
  return {PostgresStoreKind()};
#else
  return {RocksStoreKind()};
#endif
}

std::string StoreKindName(const ::testing::TestParamInfo<StoreKind>& info) {
  return info.param.name;
}

void PrintTo(const StoreKind& kind, std::ostream* os) { *os << kind.name; }

NewDelivery Hook(HookFields fields) {
  return NewDelivery{.tenant = std::move(fields.tenant),
                     .platform = "webhook",
                     .destination = kHookUrl,
                     .credential = "hooks",
                     .payload = std::move(fields.payload),
                     .idempotency_key = std::move(fields.key)};
}

std::string HookDestination(const std::string& tenant) {
  return DestinationKeyOf("webhook", tenant, "hooks", kHookUrl);
}

NewDelivery Numbered(int n) {
  return Hook({.key = "key-" + std::to_string(n), .payload = R"({"n":)" + std::to_string(n) + "}"});
}

void QueueStoreFixture::SetUp() {
  auto site = NewSite();
  ASSERT_TRUE(site) << site.error().ToString();
  site_ = std::move(*site);
  auto opened = site_->Open(options_, kT0);
  ASSERT_TRUE(opened) << opened.error().ToString();
  store_ = std::move(*opened);
}

void QueueStoreFixture::Reopen(int64_t now_ms) {
  store_.reset();
  auto opened = site_->Reopen(options_, now_ms);
  ASSERT_TRUE(opened) << opened.error().ToString();
  store_ = std::move(*opened);
}

void QueueStoreFixture::Close() {
  ASSERT_TRUE(store_->Close().ok());
  store_.reset();
}

std::string QueueStoreFixture::Enqueue(const NewDelivery& d, int64_t at_ms) {
  auto r = store_->Enqueue(d, at_ms);
  EXPECT_TRUE(r) << r.error().ToString();
  return r ? r->id : "";
}

void QueueStoreFixture::Apply(const std::string& id, const StateChange& change) {
  auto r = store_->Apply(id, change);
  ASSERT_TRUE(r) << r.error().ToString();
}

DeliveryState QueueStoreFixture::StateOf(const std::string& id) {
  auto d = store_->Get(id);
  EXPECT_TRUE(d) << d.error().ToString();
  return d ? d->state : DeliveryState::kCancelled;
}

bool QueueStoreFixture::Exists(const std::string& id) {
  auto d = store_->Get(id);
  EXPECT_TRUE(d || d.error().code() == Status::Code::kNotFound) << d.error().ToString();
  return d.has_value();
}

std::vector<std::string> QueueStoreFixture::ListIds(ListFilter f) {
  std::vector<std::string> out;
  while (true) {
    auto page = store_->List(f);
    EXPECT_TRUE(page) << page.error().ToString();
    if (!page) {
      return out;
    }
    for (const Delivery& d : page->deliveries) {
      out.push_back(d.id);
    }
    if (page->next_cursor.empty()) {
      return out;
    }
    f.after_id = page->next_cursor;
  }
}

std::vector<std::string> QueueStoreFixture::Ids(const DestinationWork& work) {
  std::vector<std::string> ids;
  for (const Delivery& d : work.deliveries) {
    ids.push_back(d.id);
  }
  return ids;
}

uint64_t QueueStoreFixture::Writes() { return store_->Stats().writes; }

uint64_t QueueStoreFixture::StoredBytes(const std::string& tenant) {
  auto n = store_->TenantStoredBytes(tenant);
  EXPECT_TRUE(n) << n.error().ToString();
  return n ? *n : 0;
}

void QueueStoreFixture::ExpectCountsMatchScan() {
  auto counts = store_->Counts();
  auto scanned = store_->ScanCounts();
  ASSERT_TRUE(counts) << counts.error().ToString();
  ASSERT_TRUE(scanned) << scanned.error().ToString();
  EXPECT_EQ(*counts, *scanned);
}

void QueueStoreFixture::ExpectAuditClean() {
  store_.reset();
  for (const std::string& problem : site_->Audit()) {
    ADD_FAILURE() << problem;
  }
  Reopen();
}

void QueueStoreFixture::ExpectStoredBytesExact() {
  auto scanned = store_->ScanStoredBytes();
  ASSERT_TRUE(scanned) << scanned.error().ToString();
  for (const char* tenant : {"acme", "globex"}) {
    auto it = scanned->find(tenant);
    EXPECT_EQ(StoredBytes(tenant), it == scanned->end() ? 0 : it->second) << tenant;
  }
  ExpectAuditClean();
}

uint64_t QueueStoreFixture::RecordBytes(const std::string& id) {
  store_.reset();
  const uint64_t n = id.size() + site_->RecordAtRest(id).size();
  Reopen();
  return n;
}

void QueueStoreContractTest::SetUp() {
  const StoreKind& kind = GetParam();
  if (kind.skip_reason) {
    const std::string why = kind.skip_reason();
    if (!why.empty()) {
      GTEST_SKIP() << kind.name << ": " << why;
    }
  }
  QueueStoreFixture::SetUp();
}

Result<std::unique_ptr<StoreSite>> QueueStoreContractTest::NewSite() {
  return GetParam().new_site();
}

Result<std::unique_ptr<QueueStore>> RocksStoreSite::Open(StoreOptions options, int64_t now_ms) {
  return Reopen(std::move(options), now_ms);  // the directory is new: the store starts empty
}

Result<std::unique_ptr<QueueStore>> RocksStoreSite::Reopen(StoreOptions options, int64_t now_ms) {
  options.path = path();
  return OpenRocksQueueStore(options, now_ms);
}

std::string RocksStoreSite::RecordAtRest(const std::string& id) {
  return RawStore(path()).Get(Family::kJobs, id);
}

void RocksStoreSite::PutRecordAtRest(const std::string& id, const std::string& bytes) {
  RawStore(path()).Put(Family::kJobs, id, bytes);
}

std::vector<std::string> RocksStoreSite::Audit() { return AuditStore(path()); }

Result<std::unique_ptr<StoreSite>> RocksQueueStoreFixture::NewSite() {
  auto site = std::make_unique<RocksStoreSite>();
  options_.path = site->path();
  return std::unique_ptr<StoreSite>(std::move(site));
}

}  // namespace egress::storage
