#include "adapters/dynamodb_log.h"

#include <algorithm>
#include <random>
#include <utility>

#include <fmt/format.h>

namespace egress::adapters {
namespace {

using nlohmann::json;

}  // namespace

DynamoDbLog::DynamoDbLog(DynamoDbClient& client, const Clock& clock, Options options)
    : client_(client),
      clock_(clock),
      options_(std::move(options)),
      epochs_(uint64_t{std::random_device{}()} << 32 | std::random_device{}()),
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
              {"UpdateExpression", "ADD n :one SET e = if_not_exists(e, :e)"},
              {"ExpressionAttributeValues", {{":one", DynamoN(1)}, {":e", DynamoN(NewEpoch())}}},
              {"ReturnValues", "UPDATED_NEW"}};
  const SteadyTime sent = clock_.Now();
  std::weak_ptr<bool> alive = alive_;
  client_.Call(
      "UpdateItem", std::move(add),
      [this, alive, sent, text = std::move(text),
       done = std::move(done)](Result<json> answer) mutable {
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
        if (!seq || *seq < 1 || *seq > kMaxSeq) {
          done(seq ? Status::Corruption("dynamodb log counter out of range") : seq.error());
          return;
        }
        WriteEntry(*seq, std::move(text), sent, std::move(done));
      });
}

void DynamoDbLog::WriteEntry(int64_t seq, std::string text, SteadyTime sent,
                             std::function<void(Result<int64_t>)> done) {
  const int64_t now_ms = ToUnixMillis(clock_.WallNow());
  const int64_t token = NewEpoch();  // tells this write from another with the same number
  json item = {{std::string(kDynamoKey), DynamoS(EntryKey(seq))},
               {"q", DynamoN(seq)},
               {"w", DynamoN(token)},
               {"b", DynamoS(text)},
               {"a", DynamoN(now_ms)}};
  if (options_.ttl.count() > 0) {
    item["x"] = DynamoN((now_ms + options_.ttl.count()) / 1000 + 1);
  }
  json put = {{"Item", std::move(item)},
              {"ConditionExpression", "attribute_not_exists(q) OR q < :q OR (q = :q AND w = :w)"},
              {"ExpressionAttributeValues", {{":q", DynamoN(seq)}, {":w", DynamoN(token)}}}};
  std::weak_ptr<bool> alive = alive_;
  client_.Call(
      "PutItem", std::move(put),
      [this, alive, seq, sent, token, done = std::move(done)](Result<json> written) mutable {
        if (alive.expired()) {
          return;
        }
        if (!written && written.error().code() != Status::Code::kFailedPrecondition) {
          done(written.error());
          return;
        }
        // A reader skips a number kGapWait after it saw the counter reach it, which
        // was after this Append sent its ADD: an entry written later than half that
        // may have been skipped. The caller sends it again under a new number.
        if (clock_.Now() - sent > kGapWait / 2) {
          done(Status::Unavailable("dynamodb log entry written too late for readers"));
          return;
        }
        if (written) {
          done(seq);
          return;
        }
        // The slot holds a newer turn of the ring (this entry is lost to readers, who
        // count it), or the counter went back below the slot's number.
        CheckSlot(seq, token, std::move(done));
      });
}

void DynamoDbLog::CheckSlot(int64_t seq, int64_t token, std::function<void(Result<int64_t>)> done) {
  json get = {{"Key", DynamoKeyOf(EntryKey(seq))}, {"ConsistentRead", true}};
  std::weak_ptr<bool> alive = alive_;
  client_.Call("GetItem", std::move(get),
               [this, alive, seq, token, done = std::move(done)](Result<json> answer) mutable {
                 if (alive.expired()) {
                   return;
                 }
                 if (!answer) {
                   done(answer.error());
                   return;
                 }
                 Result<int64_t> held = Status::Corruption("no entry");
                 Result<int64_t> writer = 0;
                 auto item = answer->find("Item");
                 if (item != answer->end() && item->is_object()) {
                   held = DynamoNumber(*item, "q", -1);
                   writer = DynamoNumber(*item, "w", 0);
                 }
                 if (!held || !writer || *held < seq || *held > kMaxSeq / 2) {
                   // Damaged (a number of another type or out of range): this number is lost to
                   // readers; sent again, the entry goes to the next slot.
                   done(Status::Unavailable("dynamodb log slot damaged; send again"));
                   return;
                 }
                 if (*held == seq && *writer == token) {
                   done(seq);  // an earlier try of this very write landed
                   return;
                 }
                 // A slot holding a higher number than a counter that is below it, or this very
                 // number from another write: the counter went back. Raise it past every number the
                 // ring can hold (its entries lie within one turn). A counter at or past the slot's
                 // number means the slot is a newer turn of the ring: readers count this entry
                 // lost.
                 const int64_t past = *held + options_.ring;
                 const int64_t below = *held > seq ? *held : past;
                 RaiseCounter(below, past, [seq, done = std::move(done)](Result<bool> raised) {
                   if (!raised) {
                     done(raised.error());
                   } else if (*raised) {
                     done(Status::Unavailable(
                         "dynamodb log counter was behind its entries; raised, send again"));
                   } else {
                     done(seq);
                   }
                 });
               });
}

void DynamoDbLog::RaiseCounter(int64_t if_below, int64_t to,
                               std::function<void(Result<bool>)> done) {
  if (if_below < 1 || to < if_below || to > kMaxSeq) {
    done(Status::Corruption("dynamodb log number out of range"));
    return;
  }
  json set = {{"Key", DynamoKeyOf(CounterKey())},
              {"UpdateExpression", "SET n = :to, e = if_not_exists(e, :e)"},
              {"ConditionExpression", "attribute_not_exists(n) OR n < :below"},
              {"ExpressionAttributeValues",
               {{":to", DynamoN(to)}, {":below", DynamoN(if_below)}, {":e", DynamoN(NewEpoch())}}}};
  std::weak_ptr<bool> alive = alive_;
  client_.Call("UpdateItem", std::move(set), [alive, done = std::move(done)](Result<json> answer) {
    if (alive.expired()) {
      return;
    }
    if (answer) {
      done(true);
    } else if (answer.error().code() == Status::Code::kFailedPrecondition) {
      done(false);  // the counter is there already
    } else {
      done(answer.error());
    }
  });
}

void DynamoDbLog::Read(std::function<void(Result<Batch>)> done) {
  json get = {{"Key", DynamoKeyOf(CounterKey())}, {"ConsistentRead", true}};
  std::weak_ptr<bool> alive = alive_;
  client_.Call("GetItem", std::move(get),
               [this, alive, done = std::move(done)](Result<json> answer) mutable {
                 if (alive.expired()) {
                   return;
                 }
                 if (!answer) {
                   done(answer.error());
                   return;
                 }
                 Result<int64_t> counter = 0;
                 Result<int64_t> epoch = 0;
                 auto item = answer->find("Item");
                 if (item != answer->end() && item->is_object()) {
                   counter = DynamoNumber(*item, "n", 0);
                   epoch = DynamoNumber(*item, "e", 0);
                 }
                 if (!counter || !epoch || *counter < 0 || *counter > kMaxSeq || *epoch < 0 ||
                     *epoch > kMaxSeq) {
                   done(Status::Corruption("dynamodb log counter out of range"));
                   return;
                 }
                 ReadFrom(*counter, *epoch, std::move(done));
               });
}

DynamoDbLog::Batch DynamoDbLog::TakePending(Batch batch) {
  batch.restarted = batch.restarted || pending_restart_;
  batch.lost += pending_lost_;
  pending_restart_ = false;
  pending_lost_ = 0;
  return batch;
}

int64_t DynamoDbLog::NewEpoch() {
  return 1 + static_cast<int64_t>(epochs_() % static_cast<uint64_t>(kMaxSeq - 1));
}

bool DynamoDbLog::Overdue(int64_t seq, SteadyTime asked) const {
  for (const auto& [counter, at] : seen_) {
    if (counter >= seq) {
      return asked - at >= kGapWait;
    }
  }
  return false;
}

void DynamoDbLog::ReadFrom(int64_t counter, int64_t epoch,
                           std::function<void(Result<Batch>)> done) {
  if (cursor_ < 0) {
    cursor_ = std::max<int64_t>(0, counter - std::clamp<int64_t>(replay_, 0, options_.ring));
  } else if (counter < cursor_ || (epoch != 0 && epoch_ != 0 && epoch != epoch_)) {
    // The counter went back, or is another one: the table was made again (its counter may have
    // passed this reader's cursor already).
    cursor_ = 0;
    seen_.clear();
    epoch_ = epoch;
    pending_restart_ = true;  // told with the next batch handed out, even if this read fails
  }
  if (epoch != 0) {
    epoch_ = epoch;
  }
  // When each number was first seen handed out: a missing entry is waited for kGapWait from then.
  if (seen_.empty() || counter > seen_.back().first) {
    seen_.emplace_back(counter, clock_.Now());
    if (seen_.size() > kMaxSeen) {
      // The second oldest goes: its numbers then count from a later sighting and wait longer; the
      // oldest keeps the wait of the numbers the reader is at from growing without end.
      seen_.erase(seen_.begin() + 1);
    }
  }
  if (counter - cursor_ > options_.ring) {
    pending_lost_ += counter - options_.ring - cursor_;  // overwritten before this reader came
    cursor_ = counter - options_.ring;
  }
  while (seen_.size() > 1 && seen_.front().first <= cursor_) {
    seen_.pop_front();
  }
  Batch batch;
  batch.counter = counter;
  if (counter == cursor_) {
    done(TakePending(std::move(batch)));
    return;
  }
  const int64_t last = std::min(counter, cursor_ + read_batch_);
  std::vector<std::string> keys;
  for (int64_t seq = cursor_ + 1; seq <= last; ++seq) {
    keys.push_back(EntryKey(seq));
  }
  std::weak_ptr<bool> alive = alive_;
  const SteadyTime asked = clock_.Now();
  client_.Call("BatchGetItem", BatchGetBody(client_.table(), keys),
               [this, alive, last, asked, batch = std::move(batch),
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
                 // DynamoDB left keys unread (throttled, or the answer's 16 MB): ask for fewer next
                 // time.
                 read_batch_ = read->partial ? std::max<int64_t>(1, read_batch_ / 2)
                                             : std::min(kReadBatch, read_batch_ * 2);
                 bool waiting = false;
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
                     // Not written yet, deleted by TTL, left unread, or never to be written: wait
                     // for it until kGapWait after its number was seen handed out.
                     if (read->partial || !Overdue(seq, asked)) {
                       waiting = true;
                       break;
                     }
                     ++batch.lost;
                     cursor_ = seq;
                     continue;
                   }
                   cursor_ = seq;
                   const std::string* text = q ? DynamoString(found->second, "b") : nullptr;
                   Result<int64_t> written = q ? DynamoNumber(found->second, "a", 0) : q;
                   if (text == nullptr || text->size() > options_.max_text_bytes || !written ||
                       *written < 0 || *written > kMaxWrittenMs) {
                     ++batch.lost;  // hostile or damaged: skipped, never applied
                     continue;
                   }
                   batch.entries.push_back({.seq = seq, .text = *text, .written_ms = *written});
                 }
                 batch.more = !waiting && cursor_ < batch.counter;
                 done(TakePending(std::move(batch)));
               });
}

}  // namespace egress::adapters
