#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "adapters/dynamodb_client.h"
#include "dispatcher/base/clock.h"
#include "dispatcher/base/result.h"

namespace egress::adapters {

// An append-only log of texts in the DynamoDB table of the budgets, which every node reads in
// order: what Redis streams give the Redis shares (RedisLearnedBudgets, RedisSharedSettings),
// for DynamoDBLearnedBudgets and DynamoDbSharedSettings (docs/deployment.md, "DynamoDB").
//
// Items, beside the meters: the counter "<name>n" (attribute n, the newest sequence number
// handed out) and a ring of `ring` entries "<name>e:<seq % ring>" (q: the sequence number, b:
// the text, a: the writer's wall clock in ms, x: when DynamoDB's TTL may delete it, when the log
// has a ttl). Append takes the next number with an atomic `ADD n :1` and then writes the entry
// under the condition that its slot holds no newer one, so a slow writer never overwrites an
// entry a later turn of the ring put there. Two round trips; nothing is held between them.
//
// Read hands out the entries after the reader's cursor in sequence order. A number handed out
// whose entry is not there yet (its writer between its two requests, or dead) stops the reading
// there until it appears or kGapWait passes; then it is skipped and counted as lost, as are
// entries the ring overwrote before this reader got to them (a reader behind by more than `ring`)
// and entries that do not decode. The counter going back (the table made again) moves the cursor
// to the start and says so (`restarted`).
//
// What the table holds is hostile input: a text longer than max_text_bytes, a sequence number or
// time of another type, are skipped and counted, never applied.
//
// All methods and callbacks run on the loop of the client; `client` and `clock` must outlive the
// log, whose callbacks end with it.
class DynamoDbLog {
 public:
  struct Options {
    std::string name;  // the items' key prefix, e.g. "relay-egress:learned:"
    int64_t ring = 4096;
    Millis ttl{0};  // 0: entries stay until the ring comes round
    size_t max_text_bytes = 16 * 1024;
  };
  struct Entry {
    int64_t seq = 0;
    std::string text;
    int64_t written_ms = 0;  // the writer's wall clock
  };
  struct Batch {
    std::vector<Entry> entries;
    int64_t lost = 0;        // sequence numbers skipped (overwritten, never written, malformed)
    bool restarted = false;  // the counter went back: the cursor is at the start again
    bool more = false;       // entries after these are waiting
    int64_t counter = 0;     // the newest sequence number handed out, as read
  };
  // How long a reader waits for an entry whose number was handed out.
  static constexpr Millis kGapWait{2000};
  // Entries read per BatchGetItem (DynamoDB's most).
  static constexpr int64_t kReadBatch = 100;

  DynamoDbLog(DynamoDbClient& client, const Clock& clock, Options options);
  ~DynamoDbLog();
  DynamoDbLog(const DynamoDbLog&) = delete;
  DynamoDbLog& operator=(const DynamoDbLog&) = delete;

  // Appends `text` (at most max_text_bytes: kInvalidArgument else); `done` gets its sequence
  // number, or the client's error (the entry may then be there or not).
  void Append(std::string text, std::function<void(Result<int64_t>)> done);

  // Reads up to kReadBatch entries after the cursor and moves the cursor past them. Before the
  // first read the cursor is placed `replay` entries before the newest (so a reader that starts
  // sees what the ring still holds of the last `replay`; the rest, as of now, is the caller's).
  void Read(std::function<void(Result<Batch>)> done);
  void SetReplay(int64_t replay) { replay_ = replay; }
  // The sequence number of the last entry handed out or skipped; -1 before the first read.
  int64_t cursor() const { return cursor_; }

  const Options& options() const { return options_; }

 private:
  std::string CounterKey() const;
  std::string EntryKey(int64_t seq) const;
  void ReadFrom(int64_t counter, std::function<void(Result<Batch>)> done);

  DynamoDbClient& client_;
  const Clock& clock_;
  Options options_;
  int64_t replay_ = 0;
  int64_t cursor_ = -1;
  int64_t gap_seq_ = -1;  // the number the reading waits on, since gap_since_
  SteadyTime gap_since_{};
  std::shared_ptr<bool> alive_;
};

}  // namespace egress::adapters
