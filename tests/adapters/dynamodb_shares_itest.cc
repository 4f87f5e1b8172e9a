// The shares beside the meters in the DynamoDB table (issue 36): the log (DynamoDbLog), what
// responses taught (DynamoDbLearnedBudgets) and the operators' settings (DynamoDbSharedSettings),
// against dynalite on loopback.

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "adapters/dynamodb_client.h"
#include "adapters/dynamodb_learned_budgets.h"
#include "adapters/dynamodb_log.h"
#include "adapters/dynamodb_shared_settings.h"
#include "adapters/learned_update_text.h"
#include "tests/support/dynamodb_test.h"
#include "tests/support/fake_clock.h"
#include "tests/support/learned_updates.h"

namespace egress::adapters {
namespace {

using nlohmann::json;
using pacing::LearnedUpdate;

class DynamoSharesTest : public DynamoTest {
 protected:
  void SetUp() override {
    DynamoTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) {
      return;
    }
    client_ = Connect();
    ASSERT_NE(client_, nullptr);
  }

  void RunFor(Millis wait) {
    const SteadyTime end = clock_.Now() + wait;
    while (clock_.Now() < end) {
      io_.run_for(std::chrono::milliseconds(1));
      io_.restart();
    }
  }

  // One request as a hostile or crashed writer would make it; the answer, or its error.
  Result<json> Raw(std::string_view operation, json body) {
    std::optional<Result<json>> answer;
    client_->Call(operation, std::move(body), [&](Result<json> r) { answer = std::move(r); });
    EXPECT_TRUE(RunUntil([&] { return answer.has_value(); }));
    return answer ? std::move(*answer) : Result<json>(Status::Unavailable("no answer"));
  }
  void PutRaw(json item) { ASSERT_TRUE(Raw("PutItem", {{"Item", std::move(item)}}).has_value()); }

  Result<int64_t> Append(DynamoDbLog& log, std::string text) {
    std::optional<Result<int64_t>> seq;
    log.Append(std::move(text), [&](Result<int64_t> r) { seq = std::move(r); });
    EXPECT_TRUE(RunUntil([&] { return seq.has_value(); }));
    return seq ? std::move(*seq) : Result<int64_t>(Status::Unavailable("no answer"));
  }
  DynamoDbLog::Batch Read(DynamoDbLog& log) {
    std::optional<Result<DynamoDbLog::Batch>> batch;
    log.Read([&](Result<DynamoDbLog::Batch> r) { batch = std::move(r); });
    EXPECT_TRUE(RunUntil([&] { return batch.has_value(); }));
    EXPECT_TRUE(batch && batch->has_value()) << (batch ? batch->error().ToString() : "none");
    return batch && batch->has_value() ? std::move(**batch) : DynamoDbLog::Batch{};
  }
  // Reads until the log has nothing more now; the texts read, in order.
  std::vector<std::string> ReadAll(DynamoDbLog& log, int64_t* lost = nullptr) {
    std::vector<std::string> texts;
    for (int i = 0; i < 1000; ++i) {
      DynamoDbLog::Batch batch = Read(log);
      for (const DynamoDbLog::Entry& e : batch.entries) {
        texts.push_back(e.text);
      }
      if (lost != nullptr) {
        *lost += batch.lost;
      }
      if (!batch.more) {
        break;
      }
    }
    return texts;
  }

  std::unique_ptr<DynamoDbClient> client_;
};

// Verifies that entries two writers append are read by every reader once each, in the order of
// their numbers, across more than one batch; and that a reader starting late sees only the last
// `replay` of them, then what comes next.
TEST_F(DynamoSharesTest, LogEntriesAreReadInOrderOnce) {
  auto other = Connect();
  ASSERT_NE(other, nullptr);
  DynamoDbLog::Options options{.name = "t:log:", .ring = 512};
  DynamoDbLog a(*client_, clock_, options);
  DynamoDbLog b(*other, clock_, options);
  DynamoDbLog reader(*client_, clock_, options);
  EXPECT_EQ(Read(reader).entries.size(), 0u);  // placed at the start: nothing yet
  std::vector<std::string> written;
  for (int i = 0; i < 230; ++i) {
    const std::string text = "entry " + std::to_string(i);
    Result<int64_t> seq = Append(i % 2 == 0 ? a : b, text);
    ASSERT_TRUE(seq.has_value()) << seq.error().ToString();
    EXPECT_EQ(*seq, i + 1);
    written.push_back(text);
  }
  int64_t lost = 0;
  EXPECT_EQ(ReadAll(reader, &lost), written);
  EXPECT_EQ(lost, 0);
  EXPECT_TRUE(ReadAll(reader).empty());  // each once

  DynamoDbLog late(*other, clock_, options);
  late.SetReplay(10);
  std::vector<std::string> last10(written.end() - 10, written.end());
  EXPECT_EQ(ReadAll(late), last10);
  ASSERT_TRUE(Append(a, "after").has_value());
  EXPECT_EQ(ReadAll(late), std::vector<std::string>{"after"});
  EXPECT_EQ(ReadAll(reader), std::vector<std::string>{"after"});
}

// Verifies that a number handed out whose entry is not written (a writer that died between its
// two requests) holds the reading for kGapWait and is then skipped as lost, the entries after it
// read in order; and that an entry that arrives within the wait is read.
TEST_F(DynamoSharesTest, LogWaitsForAGapThenSkipsIt) {
  FakeClock fake;
  DynamoDbLog::Options options{.name = "t:gap:", .ring = 64};
  DynamoDbLog writer(*client_, clock_, options);
  DynamoDbLog reader(*client_, fake, options);
  Read(reader);
  auto reserve = [&] {  // the first request of an Append, without the second
    ASSERT_TRUE(Raw("UpdateItem", {{"Key", DynamoKeyOf("t:gap:n")},
                                   {"UpdateExpression", "ADD n :one"},
                                   {"ExpressionAttributeValues", {{":one", DynamoN(1)}}}})
                    .has_value());
  };
  reserve();  // 1: never written
  ASSERT_TRUE(Append(writer, "two").has_value());
  int64_t lost = 0;
  EXPECT_TRUE(ReadAll(reader, &lost).empty());
  fake.Advance(DynamoDbLog::kGapWait - std::chrono::milliseconds(1));
  EXPECT_TRUE(ReadAll(reader, &lost).empty());
  EXPECT_EQ(lost, 0);
  fake.Advance(std::chrono::milliseconds(1));
  EXPECT_EQ(ReadAll(reader, &lost), std::vector<std::string>{"two"});
  EXPECT_EQ(lost, 1);

  reserve();  // 3: written late, within the wait
  ASSERT_TRUE(Append(writer, "four").has_value());
  EXPECT_TRUE(ReadAll(reader).empty());
  fake.Advance(std::chrono::milliseconds(500));
  PutRaw(
      {{"k", DynamoS("t:gap:e:3")}, {"q", DynamoN(3)}, {"b", DynamoS("three")}, {"a", DynamoN(1)}});
  lost = 0;
  EXPECT_EQ(ReadAll(reader, &lost), (std::vector<std::string>{"three", "four"}));
  EXPECT_EQ(lost, 0);

  // Five numbers never written (or deleted by TTL): one wait for all of them, not one each.
  for (int i = 0; i < 5; ++i) {
    reserve();
  }
  ASSERT_TRUE(Append(writer, "ten").has_value());
  EXPECT_TRUE(ReadAll(reader).empty());
  fake.Advance(DynamoDbLog::kGapWait);
  lost = 0;
  EXPECT_EQ(ReadAll(reader, &lost), std::vector<std::string>{"ten"});
  EXPECT_EQ(lost, 5);
}

// Verifies that an entry written more than kGapWait / 2 after its number was taken is reported
// failed (a reader may have skipped it: the caller sends it again).
TEST_F(DynamoSharesTest, LogReportsALateEntryFailed) {
  FakeClock fake;
  DynamoDbLog writer(*client_, fake, {.name = "t:late:", .ring = 16});
  std::optional<Result<int64_t>> seq;
  writer.Append("slow", [&](Result<int64_t> r) { seq = std::move(r); });
  fake.Advance(DynamoDbLog::kGapWait / 2 + std::chrono::milliseconds(1));
  ASSERT_TRUE(RunUntil([&] { return seq.has_value(); }));
  ASSERT_FALSE(seq->has_value());
  EXPECT_EQ(seq->error().code(), Status::Code::kUnavailable);
  EXPECT_TRUE(Append(writer, "quick").has_value());
}

// Verifies that a reader behind by more than the ring is told how many entries it lost and reads
// on from the oldest the ring holds; that a counter that went back while the entries stayed is
// raised past them (never overwriting a newer turn of the ring); and that the counter going back
// with the entries (the table made again) restarts the reader.
TEST_F(DynamoSharesTest, LogCountsWhatTheRingOverwrote) {
  DynamoDbLog::Options options{.name = "t:ring:", .ring = 8};
  DynamoDbLog writer(*client_, clock_, options);
  DynamoDbLog reader(*client_, clock_, options);
  Read(reader);
  std::vector<std::string> written;
  for (int i = 1; i <= 20; ++i) {
    written.push_back(std::to_string(i));
    ASSERT_TRUE(Append(writer, written.back()).has_value());
  }
  int64_t lost = 0;
  EXPECT_EQ(ReadAll(reader, &lost), std::vector<std::string>(written.end() - 8, written.end()));
  EXPECT_EQ(lost, 12);

  // The counter lost while the entries stay (an operator deleted it): the first Append meets a
  // slot holding a higher number, raises the counter past the ring and fails; the next lands and
  // is read.
  ASSERT_TRUE(Raw("DeleteItem", {{"Key", DynamoKeyOf("t:ring:n")}}).has_value());
  Result<int64_t> behind = Append(writer, "lost to the old counter");
  ASSERT_FALSE(behind.has_value());
  EXPECT_EQ(behind.error().code(), Status::Code::kUnavailable);
  Result<int64_t> raised = Append(writer, "after the raise");
  ASSERT_TRUE(raised.has_value()) << raised.error().ToString();
  EXPECT_GT(*raised, 20);  // past every number the ring held
  DynamoDbLog fresh(*client_, clock_, options);
  fresh.SetReplay(1);
  EXPECT_EQ(ReadAll(fresh), std::vector<std::string>{"after the raise"});

  // The table made again: the counter and the entries gone.
  ASSERT_TRUE(Raw("DeleteItem", {{"Key", DynamoKeyOf("t:ring:n")}}).has_value());
  for (int slot = 0; slot < 8; ++slot) {
    ASSERT_TRUE(
        Raw("DeleteItem", {{"Key", DynamoKeyOf("t:ring:e:" + std::to_string(slot))}}).has_value());
  }
  ASSERT_TRUE(Append(writer, "again").has_value());  // number 1 of a new counter
  DynamoDbLog::Batch batch = Read(reader);
  EXPECT_TRUE(batch.restarted);
  ASSERT_EQ(batch.entries.size(), 1u);
  EXPECT_EQ(batch.entries[0].text, "again");

  // Made again once more, and its counter past the reader's cursor before the reader looks: the
  // counter's epoch tells it apart.
  for (const std::string key : {"t:ring:n", "t:ring:e:1"}) {
    ASSERT_TRUE(Raw("DeleteItem", {{"Key", DynamoKeyOf(key)}}).has_value());
  }
  ASSERT_TRUE(Append(writer, "x1").has_value());
  ASSERT_TRUE(Append(writer, "x2").has_value());
  batch = Read(reader);
  EXPECT_TRUE(batch.restarted);
  ASSERT_EQ(batch.entries.size(), 2u);
  EXPECT_EQ(batch.entries[0].text, "x1");
}

// Verifies the counter lost while the entries stay when it had not come round the ring: the
// slot at the new number holds that very number from another write, which is told apart by the
// write's token; the counter is raised past the ring and the next Append lands.
TEST_F(DynamoSharesTest, LogTellsAnOldEntryOfTheSameNumberApart) {
  DynamoDbLog::Options options{.name = "t:same:", .ring = 64};
  DynamoDbLog writer(*client_, clock_, options);
  for (int i = 1; i <= 5; ++i) {
    ASSERT_TRUE(Append(writer, "old " + std::to_string(i)).has_value());
  }
  ASSERT_TRUE(Raw("DeleteItem", {{"Key", DynamoKeyOf("t:same:n")}}).has_value());
  Result<int64_t> behind = Append(writer, "new");
  ASSERT_FALSE(behind.has_value());
  EXPECT_EQ(behind.error().code(), Status::Code::kUnavailable);
  Result<int64_t> raised = Append(writer, "new");
  ASSERT_TRUE(raised.has_value()) << raised.error().ToString();
  EXPECT_GT(*raised, 64);
  DynamoDbLog reader(*client_, clock_, options);
  reader.SetReplay(1);
  EXPECT_EQ(ReadAll(reader), std::vector<std::string>{"new"});
}

// Verifies that entries another writer damaged (a text of another type or too long, a number
// that is not one) are skipped and counted, and the entries around them read.
TEST_F(DynamoSharesTest, LogSkipsHostileEntries) {
  DynamoDbLog::Options options{.name = "t:bad:", .ring = 16, .max_text_bytes = 32};
  DynamoDbLog writer(*client_, clock_, options);
  DynamoDbLog reader(*client_, clock_, options);
  Read(reader);
  ASSERT_TRUE(Append(writer, "one").has_value());
  EXPECT_EQ(Append(writer, std::string(33, 'x')).error().code(), Status::Code::kInvalidArgument);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(Append(writer, "placeholder").has_value());  // numbers 2, 3, 4
  }
  PutRaw({{"k", DynamoS("t:bad:e:2")}, {"q", DynamoN(2)}, {"b", DynamoN(7)}, {"a", DynamoN(1)}});
  PutRaw({{"k", DynamoS("t:bad:e:3")},
          {"q", DynamoN(3)},
          {"b", DynamoS(std::string(33, 'x'))},
          {"a", DynamoN(1)}});
  PutRaw({{"k", DynamoS("t:bad:e:4")}, {"q", DynamoS("4")}, {"b", DynamoS("x")}});
  ASSERT_TRUE(Append(writer, "five").has_value());
  int64_t lost = 0;
  EXPECT_EQ(ReadAll(reader, &lost), (std::vector<std::string>{"one", "five"}));
  EXPECT_EQ(lost, 3);
}

struct Applied {
  std::vector<LearnedUpdate> updates;
  std::vector<Millis> ages;
};

// Verifies that what one node publishes reaches the other, the latest per key only, and never
// comes back to the node that published it; that a node started later reads what the ring
// holds; and that an entry older than the share's TTL or a line that is no update is not
// applied (the rest of its entry is).
TEST_F(DynamoSharesTest, LearnedUpdatesReachTheOtherNodes) {
  auto other = Connect();
  ASSERT_NE(other, nullptr);
  Applied at_a;
  Applied at_b;
  auto share = [&](DynamoDbClient& client, const std::string& instance, Applied& applied) {
    return std::make_unique<DynamoDbLearnedBudgets>(io_, client, clock_, "t:", instance, Millis(20),
                                                    [&applied](const LearnedUpdate& u, Millis age) {
                                                      applied.updates.push_back(u);
                                                      applied.ages.push_back(age);
                                                    });
  };
  auto a = share(*client_, "node-a/1", at_a);
  auto b = share(*other, "node-b/1", at_b);
  a->Start();
  b->Start();
  a->Publish(BudgetUpdate(1, 10));
  a->Publish(BudgetUpdate(1, 15));  // replaces the first
  a->Publish(BudgetUpdate(2, 20));
  ASSERT_TRUE(RunUntil([&] { return at_b.updates.size() >= 2; }));
  EXPECT_EQ(at_b.updates, (std::vector<LearnedUpdate>{BudgetUpdate(1, 15), BudgetUpdate(2, 20)}));
  EXPECT_LT(at_b.ages[0], Millis(5000));
  EXPECT_TRUE(at_a.updates.empty());
  EXPECT_EQ(a->published(), 2u);

  Applied at_c;
  auto c = share(*other, "node-c/1", at_c);
  c->Start();
  ASSERT_TRUE(RunUntil([&] { return at_c.updates.size() >= 2; }));
  EXPECT_EQ(at_c.updates, at_b.updates);

  // An old entry and a damaged one, as another writer might leave them.
  const int64_t now_ms =
      std::chrono::duration_cast<Millis>(clock_.WallNow().time_since_epoch()).count();
  auto entry = [&](int64_t written_ms, std::string text) {  // a number taken, then its entry
    Result<json> added = Raw("UpdateItem", {{"Key", DynamoKeyOf("t:learned:n")},
                                            {"UpdateExpression", "ADD n :one"},
                                            {"ExpressionAttributeValues", {{":one", DynamoN(1)}}},
                                            {"ReturnValues", "UPDATED_NEW"}});
    ASSERT_TRUE(added.has_value());
    Result<int64_t> seq = DynamoNumber((*added)["Attributes"], "n", -1);
    ASSERT_TRUE(seq.has_value());
    PutRaw({{"k", DynamoS("t:learned:e:" + std::to_string(*seq))},
            {"q", DynamoN(*seq)},
            {"b", DynamoS(std::move(text))},
            {"a", DynamoN(written_ms)}});
  };
  entry(now_ms - DynamoDbLearnedBudgets::kTtl.count() - 1000,
        "node-x/1\n" + EncodeLearnedUpdate(BudgetUpdate(3, 30)));
  entry(now_ms,
        "node-x/1\nb 0000000000000004 0 1000 1 0 0 0\n" + EncodeLearnedUpdate(BudgetUpdate(5, 50)));
  entry(now_ms, "no instance line");
  a->Publish(BudgetUpdate(6, 60));
  ASSERT_TRUE(RunUntil([&] { return at_b.updates.size() >= 4; }));
  EXPECT_EQ(at_b.updates[2], BudgetUpdate(5, 50));
  EXPECT_EQ(at_b.updates[3], BudgetUpdate(6, 60));
  EXPECT_EQ(b->rejected(), 2u);  // the bad line and the entry without one
}

// Two nodes' settings over one table.
class DynamoSettingsTest : public DynamoSharesTest {
 protected:
  std::unique_ptr<DynamoDbSharedSettings> Settings(
      DynamoDbClient& client, std::vector<std::pair<std::string, std::string>>& seen) {
    auto s = std::make_unique<DynamoDbSharedSettings>(
        io_, client, clock_, "t:", Millis(20),
        [&seen](const std::string& name, const std::string& text) {
          seen.emplace_back(name, text);
        });
    s->Start();
    return s;
  }
  Status Put(SharedSettings& s, const std::string& name, const std::string& text) {
    std::optional<Status> done;
    s.Put(name, text, [&](Status st) { done = st; });
    EXPECT_TRUE(RunUntil([&] { return done.has_value(); }));
    return done.value_or(Status::Unavailable("no answer"));
  }
  using Seen = std::vector<std::pair<std::string, std::string>>;
};

// Verifies that a setting one node puts reaches the other, a later one replaces it, and "" (an
// ended setting) is reported as such; and that a node started after more Puts than the log
// replays still gets every setting's newest text (the scan), each once.
TEST_F(DynamoSettingsTest, ASettingReachesTheOtherNode) {
  auto other = Connect();
  ASSERT_NE(other, nullptr);
  Seen at_a;
  Seen at_b;
  auto a = Settings(*client_, at_a);
  auto b = Settings(*other, at_b);
  ASSERT_TRUE(RunUntil([&] { return b->scans() == 1; }));
  ASSERT_TRUE(Put(*a, "pauses/p1", R"({"id":"p1"})").ok());
  ASSERT_TRUE(RunUntil([&] { return !at_b.empty(); }));
  EXPECT_EQ(at_b.back(), (std::pair<std::string, std::string>{"pauses/p1", R"({"id":"p1"})"}));
  ASSERT_TRUE(Put(*a, "pauses/p1", "").ok());
  ASSERT_TRUE(RunUntil([&] { return at_b.size() == 2; }));
  EXPECT_EQ(at_b.back().second, "");

  const int kNames = static_cast<int>(DynamoDbSharedSettings::kReplay) + 40;
  for (int i = 0; i < kNames; ++i) {
    ASSERT_TRUE(Put(*a, "overrides/t" + std::to_string(i), "v1").ok());
  }
  ASSERT_TRUE(Put(*a, "overrides/t0", "v2").ok());
  Seen at_c;
  auto c = Settings(*other, at_c);
  ASSERT_TRUE(RunUntil([&] { return c->scans() == 1 && at_c.size() >= size_t(kNames) + 1; }));
  RunFor(Millis(300));  // nothing more may come
  std::map<std::string, std::string> latest;
  for (const auto& [name, text] : at_c) {
    EXPECT_EQ(latest.count(name), 0u) << name << " reported twice";
    latest[name] = text;
  }
  EXPECT_EQ(latest.size(), size_t(kNames) + 1);
  EXPECT_EQ(latest["overrides/t0"], "v2");
  EXPECT_EQ(latest["overrides/t1"], "v1");
  EXPECT_EQ(latest["pauses/p1"], "");
}

// Verifies that a Put made while DynamoDB is away reports the failure, waits, and lands once it
// is back (dynalite comes back empty: the other node starts over from the new table and sees the
// last text put).
TEST_F(DynamoSettingsTest, APutMadeWhileDynamoIsAwayLandsWhenItIsBack) {
  auto other = Connect();
  ASSERT_NE(other, nullptr);
  Seen at_a;
  Seen at_b;
  auto a = Settings(*client_, at_a);
  auto b = Settings(*other, at_b);
  ASSERT_TRUE(Put(*a, "pauses/p1", "old").ok());
  ASSERT_TRUE(RunUntil([&] { return !at_b.empty(); }));
  dynalite_.Stop();
  EXPECT_FALSE(Put(*a, "pauses/p1", "new").ok());
  EXPECT_EQ(a->pending(), 1u);
  ASSERT_TRUE(dynalite_.Start()) << dynalite_.error();
  ASSERT_TRUE(RunUntil([&] { return a->pending() == 0 && at_b.back().second == "new"; }))
      << a->pending() << " pending; b saw " << at_b.size();
}

// Verifies that setting items another writer damaged (text without its mark, a version of
// another type, a name too long) are skipped by the scan, and the good ones reported.
TEST_F(DynamoSettingsTest, HostileSettingItemsAreSkipped) {
  PutRaw({{"k", DynamoS("t:setting:a")}, {"v", DynamoN(1)}, {"t", DynamoS("=good")}});
  PutRaw({{"k", DynamoS("t:setting:b")}, {"v", DynamoN(1)}, {"t", DynamoS("no mark")}});
  PutRaw({{"k", DynamoS("t:setting:c")}, {"v", DynamoS("1")}, {"t", DynamoS("=x")}});
  PutRaw(
      {{"k", DynamoS("t:setting:" + std::string(DynamoDbSharedSettings::kMaxNameBytes + 1, 'n'))},
       {"v", DynamoN(1)},
       {"t", DynamoS("=x")}});
  PutRaw({{"k", DynamoS("t:setting:d")}, {"v", DynamoN(1)}, {"t", DynamoN(5)}});
  Seen seen;
  auto s = Settings(*client_, seen);
  ASSERT_TRUE(RunUntil([&] { return s->scans() == 1; }));
  EXPECT_EQ(seen, (Seen{{"a", "good"}}));
}

}  // namespace
}  // namespace egress::adapters
