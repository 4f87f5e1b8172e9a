#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
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
// handed out; e, a random epoch its first writer set, so a table made again is told apart even
// when its counter has caught up) and a ring of `ring` entries "<name>e:<seq % ring>" (q: the
// sequence number, w: a random token of the write, b: the text, a: the writer's wall clock in ms,
// x: when DynamoDB's TTL may delete it, when the log has a ttl). Append takes the next number with
// an atomic `ADD n :1` and then writes the entry under the condition that its slot holds no newer
// one, so a slow writer never overwrites an entry a later turn of the ring put there. Two round
// trips; nothing is held between them.
//
// Read hands out the entries after the reader's cursor in sequence order. A number handed out
// whose entry is not there (its writer between its two requests or dead, or the entry deleted by
// TTL) stops the reading there until it appears or until kGapWait has passed since this reader
// first saw the counter reach it; then it is skipped and counted as lost (every such number of a
// batch at once), as are entries the ring overwrote before this reader got to them (a reader
// behind by more than `ring`) and entries that do not decode. A writer whose entry took longer
// than kGapWait / 2 from its ADD reports failure, so its caller can send it again. The
// counter going back below the cursor (the table made again) moves the cursor to the start and
// says so (`restarted`); a counter that went back while entries stayed is raised past them by the
// first Append that meets one.
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
  // How long a reader waits for an entry after it saw the counter reach its number.
  static constexpr Millis kGapWait{2000};
  // Entries read per BatchGetItem (DynamoDB's most); halved after an answer that left keys
  // unread, doubled back after one that did not.
  static constexpr int64_t kReadBatch = 100;
  // The largest sequence number (exact in a double, as DynamoDB numbers are often read) and
  // writer's time (ms) taken from the table; beyond, an entry or counter is damaged.
  static constexpr int64_t kMaxSeq = int64_t{1} << 53;
  static constexpr int64_t kMaxWrittenMs = int64_t{1} << 52;

  DynamoDbLog(DynamoDbClient& client, const Clock& clock, Options options);
  ~DynamoDbLog();
  DynamoDbLog(const DynamoDbLog&) = delete;
  DynamoDbLog& operator=(const DynamoDbLog&) = delete;

  // Appends `text` (at most max_text_bytes: kInvalidArgument else); `done` gets its sequence
  // number, or an error after which the entry may be there or not and the caller sends it again:
  // the client's, or kUnavailable when the entry was written more than kGapWait / 2 after the
  // ADD was sent (readers may have skipped it) or the counter had gone back below the entries
  // the ring holds (it is raised past them first).
  void Append(std::string text, std::function<void(Result<int64_t>)> done);
  // Sets the counter to `to` when it is below `if_below` (it went back: a number handed out before
  // was at least `if_below`): true when it was raised, false when it was not below.
  void RaiseCounter(int64_t if_below, int64_t to, std::function<void(Result<bool>)> done);

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
  void WriteEntry(int64_t seq, std::string text, SteadyTime sent,
                  std::function<void(Result<int64_t>)> done);
  // After the slot's condition failed: a newer turn of the ring, or a counter gone back.
  void CheckSlot(int64_t seq, int64_t token, std::function<void(Result<int64_t>)> done);
  void ReadFrom(int64_t counter, int64_t epoch, std::function<void(Result<Batch>)> done);
  // Whether a counter at or past `seq` was seen kGapWait or longer before `asked` (when the read
  // that misses it was sent).
  bool Overdue(int64_t seq, SteadyTime asked) const;
  // `batch` with the restart and losses found by reads whose batch was not handed out.
  Batch TakePending(Batch batch);

  DynamoDbClient& client_;
  const Clock& clock_;
  Options options_;
  int64_t replay_ = 0;
  int64_t cursor_ = -1;
  int64_t read_batch_ = kReadBatch;
  // The counter's epoch (its attribute e, a random number the first writer of a new counter set):
  // another one means the table was made again. 0 until read.
  int64_t NewEpoch();
  std::mt19937_64 epochs_;
  int64_t epoch_ = 0;
  bool pending_restart_ = false;
  int64_t pending_lost_ = 0;
  // Each counter value read that was higher than the one before, and when: increasing.
  static constexpr size_t kMaxSeen = 64;
  std::deque<std::pair<int64_t, SteadyTime>> seen_;
  std::shared_ptr<bool> alive_;
};

}  // namespace egress::adapters
