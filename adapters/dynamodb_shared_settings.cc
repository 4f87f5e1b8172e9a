#include "adapters/dynamodb_shared_settings.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

namespace egress::adapters {
namespace {

using nlohmann::json;

}  // namespace

DynamoDbSharedSettings::DynamoDbSharedSettings(boost::asio::io_context& io, DynamoDbClient& client,
                                               const Clock& clock, std::string key_prefix,
                                               Millis poll_interval, Changed changed)
    : timer_(io),
      client_(client),
      clock_(clock),
      log_(client, clock,
           {.name = key_prefix + "settings:",
            .ring = kRing,
            .max_text_bytes = kMaxNameBytes + 2 + kMaxSettingBytes}),
      item_prefix_(key_prefix + "setting:"),
      poll_interval_(std::max(poll_interval, Millis(1))),
      changed_(std::move(changed)),
      alive_(std::make_shared<bool>(true)) {
  log_.SetReplay(kReplay);
}

DynamoDbSharedSettings::~DynamoDbSharedSettings() { timer_.cancel(); }

void DynamoDbSharedSettings::Start() { Arm(Millis(0)); }

std::string DynamoDbSharedSettings::ItemKey(const std::string& name) const {
  return item_prefix_ + name;
}

void DynamoDbSharedSettings::Send(const std::string& name, const std::string& text, Done landed) {
  if (name.empty() || name.size() > kMaxNameBytes || name.find('\n') != std::string::npos ||
      text.size() > kMaxSettingBytes) {
    landed(Status::InvalidArgument("shared setting: name or text out of range"));
    return;
  }
  std::weak_ptr<bool> alive = alive_;
  log_.Append(name + "\n=" + text, [this, alive, name, text,
                                    landed = std::move(landed)](Result<int64_t> seq) mutable {
    if (alive.expired()) {
      return;
    }
    if (!seq) {
      landed(seq.error());
      return;
    }
    json put = {{"Item",
                 {{std::string(kDynamoKey), DynamoS(ItemKey(name))},
                  {"v", DynamoN(*seq)},
                  {"t", DynamoS("=" + text)}}},
                {"ConditionExpression", "attribute_not_exists(v) OR v < :v"},
                {"ExpressionAttributeValues", {{":v", DynamoN(*seq)}}}};
    const int64_t version = *seq;
    client_.Call("PutItem", std::move(put),
                 [this, alive, name, version, text,
                  landed = std::move(landed)](Result<json> written) mutable {
                   if (alive.expired()) {
                     return;
                   }
                   if (written) {
                     landed(Status::Ok());
                   } else if (written.error().code() != Status::Code::kFailedPrecondition) {
                     landed(written.error());
                   } else {
                     CheckNewer(name, version, text, std::move(landed));
                   }
                 });
  });
}

void DynamoDbSharedSettings::CheckNewer(const std::string& name, int64_t version,
                                        const std::string& text, Done landed) {
  json get = {{"Key", DynamoKeyOf(ItemKey(name))}, {"ConsistentRead", true}};
  std::weak_ptr<bool> alive = alive_;
  client_.Call(
      "GetItem", std::move(get),
      [this, alive, name, version, text, landed = std::move(landed)](Result<json> answer) mutable {
        if (alive.expired()) {
          return;
        }
        if (!answer) {
          landed(answer.error());
          return;
        }
        Result<int64_t> held = Status::Corruption("no item");
        auto item = answer->find("Item");
        if (item != answer->end() && item->is_object()) {
          held = DynamoNumber(*item, "v", 0);
        }
        if (!held || *held < 0 || *held > DynamoDbLog::kMaxSeq / 2) {
          // Damaged (a version of another type or out of range): no condition holds over it, so
          // this version replaces it.
          json put = {{"Item",
                       {{std::string(kDynamoKey), DynamoS(ItemKey(name))},
                        {"v", DynamoN(version)},
                        {"t", DynamoS("=" + text)}}}};
          client_.Call("PutItem", std::move(put), [landed = std::move(landed)](Result<json> r) {
            landed(r ? Status::Ok() : r.error());
          });
          return;
        }
        if (*held <= version) {
          landed(Status::Ok());  // an earlier try of this very write landed
          return;
        }
        // A newer Put landed (the counter is past its version: this text was superseded), or the
        // counter went back below the item's version (raised now; this text goes again).
        log_.RaiseCounter(*held, *held, [landed = std::move(landed)](Result<bool> raised) {
          if (!raised) {
            landed(raised.error());
          } else if (*raised) {
            landed(Status::Unavailable("settings counter was behind a setting; raised"));
          } else {
            landed(Status::Ok());
          }
        });
      });
}

void DynamoDbSharedSettings::Arm(Millis wait) {
  timer_.expires_after(wait);
  std::weak_ptr<bool> alive = alive_;
  timer_.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || alive.expired()) {
      return;
    }
    Poll();
  });
}

void DynamoDbSharedSettings::Poll() {
  if (!client_.up()) {
    Arm(poll_interval_);
    return;
  }
  Flush();
  Read();
}

void DynamoDbSharedSettings::Read() {
  std::weak_ptr<bool> alive = alive_;
  log_.Read([this, alive](Result<DynamoDbLog::Batch> batch) {
    if (alive.expired()) {
      return;
    }
    if (!batch) {
      Arm(poll_interval_);
      return;
    }
    if (batch->lost > 0 || batch->restarted) {
      scan_needed_ = true;
    }
    if (batch->restarted) {
      reported_.clear();  // the table was made again: report all it has
      scan_from_ = nullptr;
      last_scan_ = std::nullopt;
    }
    for (const DynamoDbLog::Entry& entry : batch->entries) {
      const size_t newline = entry.text.find('\n');
      if (newline == std::string::npos || newline == 0 || newline > kMaxNameBytes ||
          newline + 1 >= entry.text.size() || entry.text[newline + 1] != '=') {
        continue;
      }
      Report(entry.text.substr(0, newline), entry.seq, entry.text.substr(newline + 2));
      if (alive.expired()) {
        return;
      }
    }
    // The cursor is placed already (before this scan): what is appended from now on, the log
    // reports. A scan reads the whole table, so one that follows a loss waits kMinScanGap after
    // the last; one that failed goes on from its page.
    if (scan_needed_ &&
        (!scan_from_.is_null() || !last_scan_ || clock_.Now() - *last_scan_ >= kMinScanGap)) {
      if (scan_from_.is_null()) {
        last_scan_ = clock_.Now();
      }
      Scan(scan_from_);
      return;
    }
    Arm(batch->more ? Millis(0) : poll_interval_);
  });
}

void DynamoDbSharedSettings::Scan(json start) {
  json scan = {{"FilterExpression", "begins_with(#k, :p)"},
               {"ExpressionAttributeNames", {{"#k", std::string(kDynamoKey)}}},
               {"ExpressionAttributeValues", {{":p", DynamoS(item_prefix_)}}},
               {"ConsistentRead", true}};
  scan_from_ = start;  // where the next poll goes on when this page fails
  if (!start.is_null()) {
    scan["ExclusiveStartKey"] = std::move(start);
  }
  std::weak_ptr<bool> alive = alive_;
  client_.Call("Scan", std::move(scan), [this, alive](Result<json> answer) {
    if (alive.expired()) {
      return;
    }
    if (!answer) {
      Arm(poll_interval_);  // scan_needed_ stays: the next poll goes on from scan_from_
      return;
    }
    auto items = answer->find("Items");
    if (items != answer->end() && items->is_array()) {
      for (const json& item : *items) {
        if (!item.is_object()) {
          continue;
        }
        const std::string* key = DynamoString(item, kDynamoKey);
        const std::string* text = DynamoString(item, "t");
        Result<int64_t> version = DynamoNumber(item, "v", -1);
        if (key == nullptr || !key->starts_with(item_prefix_) || text == nullptr || text->empty() ||
            (*text)[0] != '=' || text->size() > kMaxSettingBytes + 1 || !version || *version < 1 ||
            key->size() - item_prefix_.size() > kMaxNameBytes ||
            key->size() == item_prefix_.size()) {
          continue;
        }
        Report(key->substr(item_prefix_.size()), *version, text->substr(1));
        if (alive.expired()) {
          return;
        }
      }
    }
    auto next = answer->find("LastEvaluatedKey");
    if (next != answer->end() && next->is_object() && !next->empty()) {
      Scan(*next);
      return;
    }
    scan_needed_ = false;
    scan_from_ = nullptr;
    ++scans_;
    Arm(Millis(0));  // the log on from where the cursor was placed
  });
}

void DynamoDbSharedSettings::Report(const std::string& name, int64_t version,
                                    const std::string& text) {
  int64_t& reported = reported_[name];
  if (version <= reported) {
    return;
  }
  reported = version;
  changed_(name, text);
}

}  // namespace egress::adapters
