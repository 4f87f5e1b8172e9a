// The QueueStore contract (storage/queue_store.h) as tests every store must pass: each
// queue_store_contract_*_test.cc is a value-parameterized suite run over ContractStoreKinds(), so
// a second store is tested by adding its StoreKind there. What one engine alone has (the RocksDB
// store's directory, on-disk format, read-only open, disk bytes, index entries apart from the
// records) is tested in that engine's own files (rocks_queue_store_*_test.cc).
//
// Where queue_store.h leaves room, the suites read it this way, and so must every store:
// Stats().writes counts the store's committed writes (a batch is one; a lease, a batch of leases
// only or an empty batch none; a refused change none), and a restart finds a leased delivery as
// it was before the lease (queued or deferred, due when it was).

#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "dispatcher/base/result.h"
#include "storage/queue_store.h"
#include "tests/support/temp_dir.h"

namespace egress::storage {

constexpr int64_t kT0 = 1'767'225'600'000;  // 2026-01-01T00:00:00Z: when every test starts
constexpr char kHookUrl[] = "http://127.0.0.1:9/hook";

// Where one test's store lives, from its first open to the end of the test: a temporary
// directory for RocksDB, a database of its own for a store on a server. Dropping it removes the
// store and all it holds. A test drops (or closes) every handle it opened before it calls Reopen
// or one of the methods that work on the store at rest; those report problems as test failures.
class StoreSite {
 public:
  virtual ~StoreSite() = default;

  // Opens the store, empty; called once, first. options.path is the site's to set.
  virtual Result<std::unique_ptr<QueueStore>> Open(StoreOptions options, int64_t now_ms) = 0;
  // Opens the same store again, as a restart does: it holds what the handles before it made
  // durable, and nothing they kept in memory only (leases).
  virtual Result<std::unique_ptr<QueueStore>> Reopen(StoreOptions options, int64_t now_ms) = 0;
  // Opens another handle on the store while the test's stays open, as a second node opens a
  // store it shares: the store's own answer, Busy for a store one process opens alone (RocksDB).
  // The only method a test may call with a handle open.
  virtual Result<std::unique_ptr<QueueStore>> OpenPeer(StoreOptions options, int64_t now_ms) = 0;

  // At rest: the bytes the store keeps as delivery `id`'s record (what TenantStoredBytes counts
  // beside the id, what MoveCorruptToDead returns as the payload), "" when it has none.
  virtual std::string RecordAtRest(const std::string& id) = 0;
  // At rest: replaces those bytes and nothing else (no index entry, counter or idempotency key
  // changes): how a test plants a record that does not decode, or decodes as another delivery.
  virtual void PutRecordAtRest(const std::string& id, const std::string& bytes) = 0;
  // At rest: every disagreement between the records and what the store keeps beside them
  // (indexes, per-state counters, stored bytes, idempotency keys); empty when there is none.
  virtual std::vector<std::string> Audit() = 0;
};

// One QueueStore implementation under the contract. ValuesIn(ContractStoreKinds()) runs when
// the tests are registered, before main: building a StoreKind must start nothing (no server, no
// file); that is new_site's work, in the test.
struct StoreKind {
  // The suffix of the test names (".../RocksDB"): letters, digits and '_' only.
  std::string name;
  // Why the kind cannot run on this machine (e.g. its server is not installed), "" when it can;
  // unset: it always can. A reason skips each test (GTEST_SKIP) with it, as the Redis tests skip
  // without redis-server.
  std::function<std::string()> skip_reason;
  // A new, empty site for one test. An error (the server was there but did not start) fails it.
  std::function<Result<std::unique_ptr<StoreSite>>()> new_site;
};

// The kinds every contract suite runs over: the RocksDB store, in a TempDir, in the unit binary;
// the PostgreSQL store, on a database of the shared PostgresServer (tests/storage/pg_store_site.h),
// in the integration binary, which compiles the same suites with EGRESS_CONTRACT_KINDS_POSTGRES.
std::vector<StoreKind> ContractStoreKinds();

// Names each instantiation after its kind; gtest prints a kind as its name.
std::string StoreKindName(const ::testing::TestParamInfo<StoreKind>& info);
void PrintTo(const StoreKind& kind, std::ostream* os);

// What differs between the webhook deliveries the suites enqueue, by default the usual one.
struct HookFields {
  std::string tenant = "acme";
  std::string key;  // the idempotency key; none when empty
  std::string payload = R"({"text":"hi"})";
};
// A webhook delivery to kHookUrl with credential "hooks" and `fields`; a test sets what else it
// needs on the result.
NewDelivery Hook(HookFields fields = {});
// The destination key of Hook's deliveries of `tenant`.
std::string HookDestination(const std::string& tenant = "acme");
// Delivery `n` of a series: Hook with payload {"n":n} and idempotency key "key-n".
NewDelivery Numbered(int n);

// A store under test, fresh in each test: open in store_ at kT0 with options_ (the defaults but
// for what the site sets), and the helpers the suites share. A subclass says which store.
class QueueStoreFixture : public ::testing::Test {
 protected:
  void SetUp() override;
  // The site of this test's store.
  virtual Result<std::unique_ptr<StoreSite>> NewSite() = 0;

  // Drops store_ (any leases with it, as a crash does) and opens the same store with options_.
  void Reopen(int64_t now_ms = kT0);
  // Closes store_, which must succeed, and drops it.
  void Close();

  // Enqueues `d` at `at_ms` and returns its id ("" and a test failure when refused).
  std::string Enqueue(const NewDelivery& d, int64_t at_ms = kT0);
  // Applies `change` to `id`; a refusal is a fatal test failure (check with HasFatalFailure).
  void Apply(const std::string& id, const StateChange& change);
  // The state Get reads (a test failure, and cancelled, when it fails).
  DeliveryState StateOf(const std::string& id);
  // Whether Get finds `id`; errors other than NotFound are test failures.
  bool Exists(const std::string& id);
  // The ids List returns for `f`, following the cursor page by page (f.limit a page).
  std::vector<std::string> ListIds(ListFilter f);
  // The ids of the readable deliveries of `work`, in order.
  static std::vector<std::string> Ids(const DestinationWork& work);
  // The writes the store has committed (Stats().writes).
  uint64_t Writes();
  // The bytes TenantStoredBytes reads for `tenant` (0 and a test failure when it fails).
  uint64_t StoredBytes(const std::string& tenant);

  // The per-state counters agree with a scan of every record.
  void ExpectCountsMatchScan();
  // The store at rest has no disagreement between its records and the rest (StoreSite::Audit):
  // drops store_ (with its leases), audits, and opens the store again at kT0.
  void ExpectAuditClean();
  // The stored bytes of the suites' tenants, acme and globex, agree with a scan of the records;
  // then ExpectAuditClean.
  void ExpectStoredBytesExact();
  // The bytes TenantStoredBytes counts for `id`'s record: its id and its bytes at rest (drops
  // store_, with its leases, and opens the store again at kT0).
  uint64_t RecordBytes(const std::string& id);

  StoreOptions options_;
  std::unique_ptr<StoreSite> site_;
  std::unique_ptr<QueueStore> store_;  // after site_: dropped first
};

// The fixture of every contract suite: the store is of the parameter's kind, and each test skips
// when the kind cannot run here (StoreKind::skip_reason).
class QueueStoreContractTest : public QueueStoreFixture,
                               public ::testing::WithParamInterface<StoreKind> {
 protected:
  void SetUp() override;
  Result<std::unique_ptr<StoreSite>> NewSite() override;
};

// The RocksDB store's site: a TempDir of its own, the store in it at path(); at rest, records are
// read and damaged through RawStore (tests/support/raw_store.h) and audited by AuditStore
// (tests/support/store_audit.h).
class RocksStoreSite final : public StoreSite {
 public:
  std::string path() const { return dir_.Sub("store"); }

  Result<std::unique_ptr<QueueStore>> Open(StoreOptions options, int64_t now_ms) override;
  Result<std::unique_ptr<QueueStore>> Reopen(StoreOptions options, int64_t now_ms) override;
  Result<std::unique_ptr<QueueStore>> OpenPeer(StoreOptions options, int64_t now_ms) override {
    return Reopen(std::move(options), now_ms);  // RocksDB's lock refuses it: Busy
  }
  std::string RecordAtRest(const std::string& id) override;
  void PutRecordAtRest(const std::string& id, const std::string& bytes) override;
  std::vector<std::string> Audit() override;

 private:
  TempDir dir_;
};

// The fixture of the suites of what the RocksDB store alone has (rocks_queue_store_*_test.cc):
// the contract fixture's store and helpers on a RocksStoreSite, with options_.path set to it.
class RocksQueueStoreFixture : public QueueStoreFixture {
 protected:
  Result<std::unique_ptr<StoreSite>> NewSite() override;
};

}  // namespace egress::storage
