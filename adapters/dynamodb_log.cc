#include "adapters/dynamodb_log.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

namespace egress::adapters {
namespace {

using nlohmann::json;

int64_t WallMillis(const Clock& clock) {
  return std::chrono::duration_cast<Millis>(clock.WallNow().time_since_epoch()).count();
}

}  // namespace

DynamoDbLog::DynamoDbLog(DynamoDbClient& client, const Clock& clock, Options options)
    : client_(client),
      clock_(clock),
      options_(std::move(options)),
      alive_(std::make_shared<bool>(true)) {
  options_.ring = std::max<int64_t>(options_.ring, 1);
}

DynamoDbLog::~DynamoDbLog() = default;

std::string DynamoDbLog::CounterKey() const { return options_.name + "n"; }

std::string DynamoDbLog::EntryKey(int64_t seq) const {
  return fmt::format("{}e:{}", options_.name, seq % options_.ring);
}

void DynamoDbLog::Append(std::string text, std::function<void(Result<int64_t>)> done) {
  if (text.size() > options_.max_text_bytes) {
    done(Status::InvalidArgument(
        fmt::format("log entry of {} bytes; at most {}", text.size(), options_.max_text_bytes)));
    return;
  }
  json add = {{"Key", DynamoKeyOf(CounterKey())},
              {"UpdateExpression", "ADD n :one"},
              {"ExpressionAttributeValues", {{":one", DynamoN(1)}}},
              {"ReturnValues", "UPDATED_NEW"}};
  std::weak_ptr<bool> alive = alive_;
  client_.Call(
      "UpdateItem", std::move(add),
      [this, alive, text = std::move(text), done = std::move(done)](Result<json> answer) mutable {
        if (alive.expired()) {
          return;
        }
        if (!answer) {
          done(answer.error());
          return;
        }
        auto attributes = answer->find("Attributes");
        Result<int64_t> seq = Status::Corruption("dynamodb ADD answered no counter");
        if (attributes != answer->end() && attributes->is_object()) {
          seq = DynamoNumber(*attributes, "n", -1);
        }
        if (!seq || *seq < 1) {
          done(seq ? Status::Corruption("dynamodb ADD answered no counter") : seq.error());
          return;
        }
        json item = {{std::string(kDynamoKey), DynamoS(EntryKey(*seq))},
                     {"q", DynamoN(*seq)},
                     {"b", DynamoS(text)},
                     {"a", DynamoN(WallMillis(clock_))}};
        if (options_.ttl.count() > 0) {
          item["x"] = DynamoN((WallMillis(clock_) + options_.ttl.count()) / 1000 + 1);
        }
        json put = {{"Item", std::move(item)},
                    {"ConditionExpression", "attribute_not_exists(q) OR q < :q"},
                    {"ExpressionAttributeValues", {{":q", DynamoN(*seq)}}}};
        const int64_t number = *seq;
        client_.Call(
            "PutItem", std::move(put),
            [alive, number, done = std::move(done)](Result<json> written) {
              if (alive.expired()) {
                return;
              }
              // A newer turn of the ring is in the slot: this entry is lost to the
              // readers anyway (they count it), and Append did its part.
              if (!written && written.error().code() != Status::Code::kFailedPrecondition) {
                done(written.error());
                return;
              }
              done(number);
            });
      });
}

void DynamoDbLog::Read(std::function<void(Result<Batch>)> done) {
  json get = {{"Key", DynamoKeyOf(CounterKey())}, {"ConsistentRead", true}};
  std::weak_ptr<bool> alive = alive_;
  client_.Call(
      "GetItem", std::move(get),
      [this, alive, done = std::move(done)](Result<json> answer) mutable {
        if (alive.expired()) {
          return;
        }
        if (!answer) {
          done(answer.error());
          return;
        }
        Result<int64_t> counter = 0;
        auto item = answer->find("Item");
        if (item != answer->end() && item->is_object()) {
          counter = DynamoNumber(*item, "n", 0);
        }
        if (!counter || *counter < 0) {
          done(counter ? Status::Corruption("dynamodb log counter is negative") : counter.error());
          return;
        }
        ReadFrom(*counter, std::move(done));
      });
}

void DynamoDbLog::ReadFrom(int64_t counter, std::function<void(Result<Batch>)> done) {
  Batch batch;
  batch.counter = counter;
  if (cursor_ < 0) {
    cursor_ = std::max<int64_t>(0, counter - std::clamp<int64_t>(replay_, 0, options_.ring));
  } else if (counter < cursor_) {
    cursor_ = 0;  // the counter went back: the table was made again
    gap_seq_ = -1;
    batch.restarted = true;
  }
  if (counter - cursor_ > options_.ring) {
    batch.lost += counter - options_.ring - cursor_;  // overwritten before this reader came
    cursor_ = counter - options_.ring;
  }
  if (counter == cursor_) {
    done(std::move(batch));
    return;
  }
  const int64_t last = std::min(counter, cursor_ + kReadBatch);
  std::vector<std::string> keys;
  for (int64_t seq = cursor_ + 1; seq <= last; ++seq) {
    keys.push_back(EntryKey(seq));
  }
  std::weak_ptr<bool> alive = alive_;
  client_.Call("BatchGetItem", BatchGetBody(client_.table(), keys),
               [this, alive, last, batch = std::move(batch),
                done = std::move(done)](Result<json> answer) mutable {
                 if (alive.expired()) {
                   return;
                 }
                 if (!answer) {
                   done(answer.error());
                   return;
                 }
                 Result<DynamoBatchRead> read = ParseBatchGet(*answer, client_.table());
                 if (!read) {
                   done(read.error());
                   return;
                 }
                 for (int64_t seq = cursor_ + 1; seq <= last; ++seq) {
                   auto found = read->items.find(EntryKey(seq));
                   Result<int64_t> q = -1;
                   if (found != read->items.end()) {
                     q = DynamoNumber(found->second, "q", -1);
                   }
                   if (q && *q > seq) {
                     ++batch.lost;  // the ring came round over it
                     cursor_ = seq;
                     continue;
                   }
                   if (q && *q < seq) {
                     // Not written yet (or left unread): wait for it, at most kGapWait.
                     if (gap_seq_ != seq) {
                       gap_seq_ = seq;
                       gap_since_ = clock_.Now();
                     }
                     if (read->partial || clock_.Now() - gap_since_ < kGapWait) {
                       break;
                     }
                     ++batch.lost;
                     cursor_ = seq;
                     continue;
                   }
                   cursor_ = seq;
                   const std::string* text = q ? DynamoString(found->second, "b") : nullptr;
                   Result<int64_t> written = q ? DynamoNumber(found->second, "a", 0) : q;
                   if (text == nullptr || text->size() > options_.max_text_bytes || !written) {
                     ++batch.lost;  // hostile or damaged: skipped, never applied
                     continue;
                   }
                   batch.entries.push_back({.seq = seq, .text = *text, .written_ms = *written});
                 }
                 batch.more = cursor_ < batch.counter && gap_seq_ != cursor_ + 1;
                 done(std::move(batch));
               });
}

}  // namespace egress::adapters
