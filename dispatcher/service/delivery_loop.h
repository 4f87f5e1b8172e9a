#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>

#include "adapters/platform_adapter.h"
#include "dispatcher/clock.h"
#include "dispatcher/scheduler.h"
#include "dispatcher/service/credential_book.h"
#include "dispatcher/service/metrics.h"
#include "storage/queue_store.h"

namespace egress::service {

// Finds the adapter of a platform ("slack", ...); InvalidArgument for an unknown one.
using AdapterLookup =
    std::function<Result<const adapters::PlatformAdapter*>(std::string_view platform)>;

// What GET /v1/destinations shows of one destination.
struct DestinationInfo {
  std::string platform, tenant, credential, destination;
  dispatcher::DestinationView view;
  std::optional<dispatcher::Budget> budget;  // the destination's own scope
  std::vector<std::pair<std::string, std::string>> last_headers;
  int64_t last_response_ms = 0;
};

// Moves deliveries from the store to the platforms: keeps one head per destination with work in
// the Scheduler, asks it what may go, leases the delivery, sends it through its adapter and the
// transport, folds the response into the Scheduler and persists the verdict.
//
// The head of a destination is its earliest delivery that is not in flight (store order), so a
// deferred delivery holds those behind it until its next attempt: order is kept and a parked
// destination stays parked. Memory grows with destinations that have work, not with deliveries.
//
// All methods run on the loop (`io`). Store calls run on `storage` and post back. Everything
// passed in must outlive the DeliveryLoop; Service destroys it after the loop has stopped.
class DeliveryLoop {
 public:
  DeliveryLoop(boost::asio::io_context& io, boost::asio::thread_pool& storage,
               storage::QueueStore& store, dispatcher::Scheduler& scheduler,
               adapters::HttpTransport& transport, AdapterLookup adapters,
               const CredentialBook& credentials, const Clock& clock, Metrics& metrics);

  // Loads every destination with work from the store and starts pacing.
  void Start();
  // A delivery became durable or was replayed: make sure its destination is paced.
  void Notify(const storage::Delivery& delivery);
  // Stops dispatching; calls `done` once no attempt is in flight.
  void Drain(std::function<void()> done);
  // Re-enables a disabled destination (by its destination key); false when unknown.
  bool Enable(const std::string& destination_key);

  std::vector<DestinationInfo> Destinations() const;
  size_t in_flight() const { return in_flight_.size(); }

 private:
  struct Dest {
    dispatcher::DestinationId id;
    std::string key;
    bool has_head = false;
    std::string head_id;
    bool fetching = false;
    bool dirty = false;  // work arrived while fetching
    // Fetch after this id: everything before it is finished or in flight. Cleared (scan from
    // the start) when an earlier delivery becomes waiting again (deferred, replayed). Saves
    // walking over the deletions finished deliveries leave in the destination index.
    std::string cursor;
    std::vector<std::pair<std::string, std::string>> last_headers;
    int64_t last_response_ms = 0;
  };
  struct InFlight {
    std::string dest_key;
    uint64_t sequence = 0;
  };

  Dest* Ensure(const std::string& key);
  void Fetch(Dest& dest);
  void OnFetched(const std::string& key, Result<storage::DestinationWork> work);
  void OfferHead(Dest& dest, const storage::Delivery& d);
  void SchedulePump();
  void Pump();
  void Dispatch(const dispatcher::Decision& decision);
  void Send(const std::string& key, uint64_t sequence, storage::Delivery d);
  void OnResponse(const std::string& key, uint64_t sequence, const storage::Delivery& d,
                  const adapters::PlatformAdapter& adapter, Result<adapters::HttpResponse> r);
  // Releases the attempt and persists its verdict.
  void Finish(const std::string& key, const storage::Delivery& d,
              const dispatcher::Verdict& verdict, std::optional<storage::Attempt> attempt);
  void Persist(const std::string& key, const storage::Delivery& d, storage::StateChange change);
  void CheckDrained();
  int64_t WallMs() const { return ToUnixMillis(clock_.WallNow()); }

  boost::asio::io_context& io_;
  boost::asio::thread_pool& storage_;
  storage::QueueStore& store_;
  dispatcher::Scheduler& scheduler_;
  adapters::HttpTransport& transport_;
  AdapterLookup adapters_;
  const CredentialBook& credentials_;
  const Clock& clock_;
  Metrics& metrics_;
  boost::asio::steady_timer timer_;
  std::shared_ptr<bool> alive_;
  bool pump_scheduled_ = false;
  bool draining_ = false;
  std::function<void()> drained_;
  std::unordered_map<std::string, Dest> dests_;
  std::unordered_map<uint32_t, std::string> keys_by_id_;
  std::unordered_map<std::string, InFlight> in_flight_;  // delivery id ->
  size_t persisting_ = 0;
};

}  // namespace egress::service
