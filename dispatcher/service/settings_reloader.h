#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "dispatcher/base/clock.h"
#include "dispatcher/base/status.h"
#include "dispatcher/service/stored_settings.h"
#include "storage/queue_store.h"

namespace egress::service {

// Keeps a node's settings in step with a store other nodes write too (the PostgreSQL store;
// docs/storage.md, "PostgreSQL"): every `every` it reads QueueStore::SettingsVersion on the
// storage pool and, when it differs from the version of the settings in force, reads them all
// (ReadStoredSettings) and hands them to `apply` on the loop, which puts them in force in place
// of the ones before (Service::ApplySettings). A read or an apply that fails (the store cannot
// be reached, a setting does not parse, two tenants share a key) changes nothing: the settings
// in force stay, `settings_reload_failed` is logged (at the first failure, then at every 60th in
// a row, with the count) and the next tick tries again. Each reload put in force logs
// `settings_reloaded`.
//
// The node's own changes: the admin API writes a setting, then puts it in force (API keys are in
// force before the write), so a reload read before the write landed would put the old value
// back. Every such change is bracketed by BeginLocalChange and EndLocalChange: no read starts
// while one is under way, and a read during which one began is dropped unapplied (its write
// moved the version, so the next tick reads again).
//
// Runs on the loop (`io`); the reads run on `storage` and post back. `store` and `apply`'s
// objects must outlive the last pool job: the owner joins the pool before destroying the store,
// and nothing reaches a destroyed reloader (its handlers hold a liveness flag).
class SettingsReloader {
 public:
  struct Options {
    Millis every{1000};  // Default: 1 s.
  };
  // Puts `settings` in force, on the loop; an error leaves the settings in force as they were.
  using Apply = std::function<Status(const StoredSettings& settings)>;

  SettingsReloader(boost::asio::io_context& io, boost::asio::any_io_executor storage,
                   storage::QueueStore& store, Apply apply, Options options);
  ~SettingsReloader();
  SettingsReloader(const SettingsReloader&) = delete;
  SettingsReloader& operator=(const SettingsReloader&) = delete;

  // Starts looking; `applied` is the version of the settings in force (StoredSettings::version of
  // those read at start). Call once.
  void Start(uint64_t applied);
  // Stops looking (shutdown); a read on the pool finishes unseen.
  void Stop();

  // A change of the settings made by this node (a write to the store, then in force) begins or
  // ends. Called in pairs, on the loop, also when the reloader is not started.
  void BeginLocalChange();
  void EndLocalChange();

  // The version of the settings in force.
  uint64_t applied() const { return applied_; }

 private:
  // What one pool job read: nothing when the version had not moved.
  using Read = Result<std::optional<StoredSettings>>;

  void Arm();
  void Tick();
  void Finish(uint64_t changes_before, Read read);
  void Failed(const Status& error);

  boost::asio::io_context& io_;
  boost::asio::any_io_executor storage_;
  storage::QueueStore& store_;
  Apply apply_;
  const Options options_;
  boost::asio::steady_timer timer_;
  std::shared_ptr<bool> alive_;
  bool stopped_ = false;
  uint64_t applied_ = 0;
  uint64_t local_changes_ = 0;  // BeginLocalChange calls
  int local_open_ = 0;          // begun and not ended
  int failures_ = 0;            // in a row
};

}  // namespace egress::service
