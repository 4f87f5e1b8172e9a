#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include "adapters/dynamodb_client.h"
#include "adapters/dynamodb_log.h"
#include "adapters/shared_settings.h"
#include "dispatcher/base/clock.h"

namespace egress::adapters {

// SharedSettings through the DynamoDB table of the budgets (docs/deployment.md, "DynamoDB").
//
// Put appends "<name>\n=<text>" to the log "<prefix>settings:" (DynamoDbLog, a ring of kRing
// entries that never expire) and then writes the item "<prefix>setting:<name>" (v: the entry's
// sequence number, t: "=" and the text) under the condition that the item holds no newer
// version. Every poll_interval a node reads the log on from where it stopped and reports each
// entry newer than what it reported for that name. Where the log cannot tell it everything (the
// first poll after a start, entries it lost: the ring came round, or an entry was never written;
// the table made again), it scans the setting items (a Scan of the table, filtered to them, in
// pages) and reports every item newer than what it reported; the log's cursor was placed before
// the scan began, kReplay entries back, so a Put that was between its two writes is seen too.
// A scan reads every item of the table (meters too), so one that follows lost entries starts at
// most every kMinScanGap, and one whose page failed goes on from that page at the next poll. A
// Put whose item meets a newer version checks whether the counter went back below it (the
// counter is raised, and the Put is sent again) or another Put came later (this one is done).
//
// What the table holds is hostile input: an entry or item whose name is longer than
// kMaxNameBytes or text longer than kMaxSettingBytes, or of another shape, is skipped.
//
// All methods and callbacks run on the loop of `io` (the client's); `client` and `clock` must
// outlive this object, whose timer and callbacks end with it.
class DynamoDbSharedSettings final : public SharedSettings {
 public:
  static constexpr int64_t kRing = 1024;
  static constexpr int64_t kReplay = 64;
  static constexpr size_t kMaxNameBytes = 1024;
  // The least time between the starts of two scans that follow lost entries.
  static constexpr Millis kMinScanGap{5000};

  DynamoDbSharedSettings(boost::asio::io_context& io, DynamoDbClient& client, const Clock& clock,
                         std::string key_prefix, Millis poll_interval, Changed changed);
  ~DynamoDbSharedSettings() override;

  void Start() override;

  uint64_t scans() const { return scans_; }

 protected:
  void Send(const std::string& name, const std::string& text, Done landed) override;

 private:
  void Arm(Millis wait);
  void Poll();
  void Read();
  // Scans the setting items from `start` (a page's LastEvaluatedKey; null: from the beginning),
  // then reads the log on.
  void Scan(nlohmann::json start);
  // After the setting item's condition failed: a newer Put, or a counter that went back.
  void CheckNewer(const std::string& name, int64_t version, const std::string& text, Done landed);
  // Reports `text` of `name` when `version` is newer than what was reported for it.
  void Report(const std::string& name, int64_t version, const std::string& text);
  std::string ItemKey(const std::string& name) const;

  boost::asio::steady_timer timer_;
  DynamoDbClient& client_;
  const Clock& clock_;
  DynamoDbLog log_;
  std::string item_prefix_;
  Millis poll_interval_;
  Changed changed_;
  bool scan_needed_ = true;
  nlohmann::json scan_from_;             // where a scan under way goes on; null: none under way
  std::optional<SteadyTime> last_scan_;  // when the last scan began
  uint64_t scans_ = 0;
  std::map<std::string, int64_t> reported_;  // name -> the version last reported
  std::shared_ptr<bool> alive_;
};

}  // namespace egress::adapters
