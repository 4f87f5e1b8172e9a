#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "adapters/redis_connection.h"
#include "dispatcher/base/clock.h"
#include "dispatcher/base/status.h"

namespace egress::adapters {

// Settings every node must hold alike (a tenant's operator rate limits), shared through the
// Redis of the budgets (docs/deployment.md, "Running N nodes"). Put writes the hash field
// "<prefix>settings" `name` as "<version>:<text>", the version taken from the counter
// "<prefix>settings:version", in one script. Every node reads the counter every poll_interval
// and, when it moved, reads the hash and reports each setting whose version is newer than the
// newest it reported (all of them after a start, or after Redis lost the counter). Text is opaque
// here; "" means deleted. The two keys never expire: a setting stays until it is replaced, as in
// each node's own store. A field longer than kMaxSettingBytes, or of another shape, is skipped.
//
// All methods and callbacks run on the loop of `io` (the connection's); `connection` must
// outlive this object, whose timer and callbacks end with it.
class RedisSharedSettings {
 public:
  static constexpr size_t kMaxSettingBytes = 64 * 1024;
  using Changed = std::function<void(const std::string& name, const std::string& text)>;
  using Done = std::function<void(Status)>;

  RedisSharedSettings(boost::asio::io_context& io, RedisConnection& connection,
                      std::string key_prefix, Millis poll_interval, Changed changed);
  ~RedisSharedSettings();
  RedisSharedSettings(const RedisSharedSettings&) = delete;
  RedisSharedSettings& operator=(const RedisSharedSettings&) = delete;

  // Starts polling; call once.
  void Start();
  // Stores `text` under `name` for every node. `done` (may be empty) gets the first try's
  // outcome: kUnavailable when Redis cannot be reached or refuses the script (Ok at once when a
  // Put of the name is in flight: this text follows it at the next poll). A Put that did not
  // land is tried again at every poll until it does (a later Put of the same name replaces it),
  // so a change made while Redis was away reaches the other nodes once it is back, and an ended
  // setting (a resumed pause) does not come back from the old value Redis still holds. What
  // waits is lost if this process stops first.
  void Put(const std::string& name, const std::string& text, Done done);
  // Puts not landed yet.
  size_t pending() const { return pending_.size(); }

 private:
  void Arm();
  void Poll();
  void Read(int64_t counter);
  // Sends the pending text of `name` (one script in flight per name).
  void Send(const std::string& name, Done done);
  // Sends every pending Put that is not in flight.
  void Flush();

  struct Pending {
    std::string text;
    uint64_t generation = 0;  // of the Put it holds
    bool sending = false;
  };
  std::map<std::string, Pending> pending_;
  uint64_t generation_ = 0;

  boost::asio::steady_timer timer_;
  RedisConnection& connection_;
  std::string hash_;
  std::string counter_;
  Millis poll_interval_;
  Changed changed_;
  int64_t last_counter_ = -1;
  int64_t seen_version_ = 0;
  bool polling_ = false;
  std::shared_ptr<bool> alive_;
};

}  // namespace egress::adapters
