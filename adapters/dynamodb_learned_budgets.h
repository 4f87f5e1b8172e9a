#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "adapters/dynamodb_client.h"
#include "adapters/dynamodb_log.h"
#include "adapters/learned_update_text.h"
#include "adapters/polling_learned_share.h"
#include "dispatcher/base/clock.h"
#include "dispatcher/pacing/learned_share.h"

namespace egress::adapters {

// What each node's responses taught its Scheduler (pacing::LearnedUpdate), shared through the
// DynamoDB table of the budgets (docs/pacing.md, "Shared learning"): RedisLearnedBudgets' job
// where there is no Redis.
//
// Publish keeps the latest update per key; every poll_interval the node appends what it kept to
// the log "<prefix>learned:" (DynamoDbLog: a ring of kRing entries that DynamoDB's TTL deletes
// after kTtl), at most kUpdatesPerEntry updates an entry, each entry "<instance>\n<update>\n...".
// Then it reads what was appended since (after a start: what the ring holds), and hands each
// update another instance wrote to `apply` in order, with its age: the reader's wall clock minus
// the writer's (the clock skew between nodes adds to it or takes from it; an entry older than kTtl
// is not applied).
//
// What the table holds is hostile input: an entry or update that does not decode is skipped and
// counted. Updates kept while the client is down, or beyond kMaxPending keys, are dropped
// (counted): the other nodes learn from their own responses meanwhile.
//
// All methods and callbacks run on the loop of `io` (the client's); `client` and `clock` must
// outlive this object, whose timer and callbacks end with it.
class DynamoDbLearnedBudgets final : public PollingLearnedShare {
 public:
  static constexpr int64_t kRing = 4096;
  static constexpr size_t kUpdatesPerEntry = 100;

  // `instance` names this process among the nodes (unique per start: its own entries are not
  // applied again; at most 128 bytes, no newline).
  DynamoDbLearnedBudgets(boost::asio::io_context& io, DynamoDbClient& client, const Clock& clock,
                         std::string key_prefix, std::string instance, Millis poll_interval,
                         Apply apply);

 protected:
  bool StoreUp() const override { return client_.up(); }
  void Flush(std::vector<pacing::LearnedUpdate> updates) override;
  void Read() override;

 private:
  // Applies one entry's updates; false when this object was destroyed meanwhile.
  bool Consume(const DynamoDbLog::Entry& entry);

  DynamoDbClient& client_;
  const Clock& clock_;
  DynamoDbLog log_;
  std::string instance_;
};

}  // namespace egress::adapters
