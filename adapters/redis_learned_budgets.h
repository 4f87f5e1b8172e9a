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

#include "adapters/learned_update_text.h"
#include "adapters/polling_learned_share.h"
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
// (DecodeLearnedUpdate) is skipped and counted. Updates kept while Redis is down, or beyond
// kMaxPending keys, are dropped (counted): the other nodes learn from their own responses
// meanwhile.
//
// All methods and callbacks run on the loop of `io` (the connection's); `connection` must
// outlive this object, whose timer and callbacks end with it.
class RedisLearnedBudgets final : public PollingLearnedShare {
 public:
  static constexpr int64_t kMaxEntries = 10'000;
  static constexpr int64_t kReadCount = 200;

  // `instance` names this process among the nodes (unique per start: its own entries are not
  // applied again).
  RedisLearnedBudgets(boost::asio::io_context& io, RedisConnection& connection,
                      std::string key_prefix, std::string instance, Millis poll_interval,
                      Apply apply);

 protected:
  bool StoreUp() const override { return connection_.up(); }
  void Flush(std::vector<pacing::LearnedUpdate> updates) override;
  void Read() override;

 private:
  // Applies the entries of one read script's answer; returns how many it held, or -1 when the
  // answer has another shape.
  int64_t Consume(const RedisReply& reply);

  RedisConnection& connection_;
  std::string stream_;
  std::string instance_;
  std::string last_id_;  // empty until the first entry is read
};

}  // namespace egress::adapters
