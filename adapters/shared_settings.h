#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "dispatcher/base/status.h"

namespace egress::adapters {

// Settings every node must hold alike (a tenant's operator rate limits, pauses), shared through
// the store of the budgets (docs/deployment.md, "Running N nodes"): RedisSharedSettings or
// DynamoDbSharedSettings. Text is opaque here; "" means deleted. Each node reports every setting
// another node (or itself) stored, newest last, through the Changed callback its subclass was
// made with.
//
// This class is the outbox both share: Put keeps the text until the store takes it. `done` (may
// be empty) gets the first try's outcome: kUnavailable when the store cannot be reached or
// refuses (Ok at once when a Put of the name is in flight: this text follows it at the next
// poll). A Put that did not land is tried again at every poll (Flush) until it does (a later Put
// of the same name replaces it), so a change made while the store was away reaches the other
// nodes once it is back, and an ended setting (a resumed pause) does not come back from the old
// value the store still holds. What waits is lost if this process stops first.
//
// All methods and callbacks run on one loop, the store client's.
class SharedSettings {
 public:
  static constexpr size_t kMaxSettingBytes = 64 * 1024;
  using Changed = std::function<void(const std::string& name, const std::string& text)>;
  using Done = std::function<void(Status)>;

  SharedSettings() : alive_(std::make_shared<bool>(true)) {}
  virtual ~SharedSettings() = default;
  SharedSettings(const SharedSettings&) = delete;
  SharedSettings& operator=(const SharedSettings&) = delete;

  // Starts polling; call once.
  virtual void Start() = 0;
  // Stores `text` under `name` for every node (above).
  void Put(const std::string& name, const std::string& text, Done done);
  // Puts not landed yet.
  size_t pending() const { return pending_.size(); }

 protected:
  // Stores `text` under `name` once; `landed` runs once with the outcome (unless this object is
  // destroyed first). One Send per name is in flight at a time.
  virtual void Send(const std::string& name, const std::string& text, Done landed) = 0;
  // Sends every pending Put that is not in flight; subclasses call it at each poll.
  void Flush();

 private:
  void SendPending(const std::string& name, Done done);

  struct Pending {
    std::string text;
    uint64_t generation = 0;  // of the Put it holds
    bool sending = false;
  };
  std::map<std::string, Pending> pending_;
  uint64_t generation_ = 0;
  std::shared_ptr<bool> alive_;
};

}  // namespace egress::adapters
