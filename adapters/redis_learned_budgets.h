#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "adapters/redis_connection.h"
#include "dispatcher/base/clock.h"
#include "dispatcher/base/result.h"
#include "dispatcher/pacing/learned_share.h"

namespace egress::adapters {

// What each node's responses taught its Scheduler (learned limits and bursts, stated windows,
// adaptive paces, Discord bucket ids: pacing::LearnedUpdate), shared through the Redis of the
// budgets (docs/pacing.md, "Shared learning").
//
// Publish keeps the latest update per key (a key whose headers change on every response costs
// one entry per poll, not one per response); every poll_interval the node appends what it kept
// to the stream "<prefix>learned", each entry with the publishing instance's id, in one script
// that also trims entries older than kTtl (on Redis' clock) and beyond kMaxEntries and makes the
// stream expire when no node writes for kTtl. Then it reads what the others wrote since where it
// stopped (after a start: from kTtl ago), kReadCount entries per script, and hands each entry
// another instance wrote to `apply` in order, with its age on Redis' clock.
//
// What Redis holds is hostile input. The read script answers each entry as its id and its two
// fields only when they are short (an empty field else), and always the id it read up to, so
// one entry of any size or shape never stops the reading; an entry that does not decode
// (Decode) is skipped and counted. Updates kept while Redis is down, or beyond kMaxPending keys,
// are dropped (counted): the other nodes learn from their own responses meanwhile.
//
// All methods and callbacks run on the loop of `io` (the connection's); `connection` must
// outlive this object, whose timer and callbacks end with it.
class RedisLearnedBudgets final : public pacing::LearnedShare {
 public:
  static constexpr size_t kMaxEntryBytes = 160;
  static constexpr int64_t kMaxEntries = 10'000;
  static constexpr int64_t kReadCount = 200;
  static constexpr size_t kMaxPending = 4'096;
  static constexpr Millis kTtl = pacing::kLearnedTtl;
  using Apply = std::function<void(const pacing::LearnedUpdate&, Millis age)>;

  // `instance` names this process among the nodes (unique per start: its own entries are not
  // applied again).
  RedisLearnedBudgets(boost::asio::io_context& io, RedisConnection& connection,
                      std::string key_prefix, std::string instance, Millis poll_interval,
                      Apply apply);
  ~RedisLearnedBudgets() override;
  RedisLearnedBudgets(const RedisLearnedBudgets&) = delete;
  RedisLearnedBudgets& operator=(const RedisLearnedBudgets&) = delete;

  // Starts writing and reading; call once.
  void Start();
  // Keeps `update` for the next poll, replacing one kept for the same key.
  void Publish(const pacing::LearnedUpdate& update) override;

  // The text of an update in the stream, e.g. "b 00ab..ef 5 5000 5 0 0 0" (budget: key, limit,
  // scale_ms, burst, adaptive, probing, hold_ms), "f <key>" (forget), "d <route> <bucket>".
  static std::string Encode(const pacing::LearnedUpdate& update);
  // The inverse; kInvalidArgument naming the field for anything else (numbers out of range
  // included).
  static Result<pacing::LearnedUpdate> Decode(std::string_view text);

  uint64_t published() const { return published_; }
  uint64_t dropped() const { return dropped_; }
  uint64_t applied() const { return applied_; }
  uint64_t rejected() const { return rejected_; }

 private:
  void Arm(Millis wait);
  void Poll();
  void Flush();
  void Read();
  // Applies the entries of one read script's answer; returns how many it held, or -1 when the
  // answer has another shape.
  int64_t Consume(const RedisReply& reply);

  boost::asio::steady_timer timer_;
  RedisConnection& connection_;
  std::string stream_;
  std::string instance_;
  Millis poll_interval_;
  Apply apply_;
  std::string last_id_;  // empty until the first entry is read
  // Updates waiting for the next poll, the latest per (is a bucket, key).
  std::vector<pacing::LearnedUpdate> pending_;
  std::map<std::pair<bool, pacing::ScopeKey>, size_t> pending_index_;
  uint64_t published_ = 0;
  uint64_t dropped_ = 0;
  uint64_t applied_ = 0;
  uint64_t rejected_ = 0;
  std::shared_ptr<bool> alive_;
};

}  // namespace egress::adapters
