// Backend over the store opened directly, for when no service is running.

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>

#include <sys/stat.h>

#include "dispatcher/base/clock.h"
#include "dispatcher/cli/backend.h"
#include "storage/delivery_json.h"
#include "storage/operator_actions.h"
#include "storage/rocks_queue_store.h"
#include "storage/secrets_key.h"

namespace egress::cli {
namespace {

using nlohmann::json;
using storage::Delivery;
using storage::DeliveryState;

constexpr size_t kReplaySlice = 1000;  // deliveries one slice of an offline replay looks at

Result<storage::ListFilter> ToListFilter(const DeliveryFilter& f) {
  storage::ListFilter out;
  if (!f.state.empty()) {
    out.state = storage::ParseState(f.state);
    if (!out.state) {
      return Status::InvalidArgument("state: unknown state '" + f.state + "'");
    }
  }
  out.tenant = f.tenant;
  out.platform = f.platform;
  out.destination = f.destination;
  out.reason_prefix = f.reason;
  out.since_ms = f.since_ms;
  out.until_ms = f.until_ms;
  out.after_id = f.cursor;
  if (f.limit > 0) {
    out.limit = static_cast<size_t>(f.limit);
  }
  return out;
}

class StoreBackend final : public Backend {
 public:
  StoreBackend(std::string dir, std::unique_ptr<storage::QueueStore> store)
      : dir_(std::move(dir)), store_(std::move(store)) {}
  ~StoreBackend() override {
    // Nothing useful to do about a failed close of a store we only read or changed atomically.
    store_->Close().IgnoreError();
  }

  Result<json> List(const DeliveryFilter& f) override {
    auto filter = ToListFilter(f);
    if (!filter) {
      return filter.error();
    }
    auto page = store_->List(*filter);
    if (!page) {
      return page.error();
    }
    json list = json::array();
    for (const Delivery& d : page->deliveries) {
      list.push_back(storage::DeliveryToJson(d, false));
    }
    json out = {{"deliveries", list}};
    out["next_cursor"] = page->next_cursor.empty() ? json(nullptr) : json(page->next_cursor);
    return out;
  }

  Result<json> Get(const std::string& id) override {
    auto d = store_->Get(id);
    if (!d) {
      return d.error();
    }
    return storage::DeliveryToJson(*d, true);
  }

  Result<json> Replay(const std::string& id) override {
    auto d = storage::ReplayOne(*store_, id, NowMs());
    if (!d) {
      return d.error();
    }
    return json{{"id", d->id}, {"state", "queued"}};
  }

  Result<json> ReplayMatching(const DeliveryFilter& f, bool dry_run,
                              const ReplayProgress& progress) override {
    auto filter = ToListFilter(f);
    if (!filter) {
      return filter.error();
    }
    if (dry_run) {
      auto count = storage::ReplayMatching(*store_, *filter, true, NowMs());
      if (!count) {
        return count.error();
      }
      return json{{"matched", count->matched}, {"replayed", 0}, {"dry_run", true}};
    }
    // In slices, as the service's job does: progress after each, memory bounded by one slice.
    uint64_t matched = 0;
    uint64_t replayed = 0;
    filter->after_id.clear();
    for (;;) {
      auto count = storage::ReplayMatching(*store_, *filter, false, NowMs(), nullptr, kReplaySlice);
      if (!count) {
        return count.error();
      }
      matched += count->matched;
      replayed += count->replayed;
      if (progress) {
        progress(matched, replayed);
      }
      if (count->done) {
        break;
      }
      filter->after_id = std::move(count->cursor);
    }
    return json{{"matched", matched}, {"replayed", replayed}, {"dry_run", false}};
  }

  Result<json> Cancel(const std::string& id) override {
    auto d = storage::Cancel(*store_, id, NowMs());
    if (!d) {
      return d.error();
    }
    return json{{"id", id}, {"state", "cancelled"}};
  }

  Result<json> Stats() override {
    auto counts = store_->Counts();
    if (!counts) {
      return counts.error();
    }
    json out = json::object();
    for (auto state : storage::kAllStates) {
      out[std::string(storage::StateName(state))] = storage::CountOf(*counts, state);
    }
    return out;
  }

  // Per destination with work: counts of its waiting and in-flight deliveries and when the
  // earliest waiting one is due. Budgets and disabled flags live in the service only. Every
  // destination at once, in the store's key order (an offline tool over a store no service
  // holds): pages, their cursors and the other sort are the service's.
  Result<json> Destinations(const DestinationsQuery& q) override {
    if (!q.sort.empty() && q.sort != "key") {
      return Status::Unavailable("sort " + q.sort + " needs the running service");
    }
    if (!q.cursor.empty()) {
      return Status::Unavailable("--cursor needs the running service (the store lists all)");
    }
    json list = json::array();
    std::string after;
    while (true) {
      auto keys = store_->ListDestinations(after, 1000);
      if (!keys) {
        return keys.error();
      }
      for (const std::string& key : *keys) {
        storage::DestinationParts p;
        if (!storage::SplitDestinationKey(key, p) ||
            (!q.platform.empty() && p.platform != q.platform) ||
            (!q.tenant.empty() && p.tenant != q.tenant)) {
          continue;
        }
        auto entry = Summarize(key, p);
        if (!entry) {
          return entry.error();
        }
        list.push_back(std::move(*entry));
      }
      if (keys->size() < 1000) {
        break;
      }
      after = keys->back();
    }
    return json{{"destinations", list}, {"next_cursor", nullptr}};
  }

  Result<json> Enable(const std::string&) override {
    return Status::Unavailable(
        "destinations enable needs the running service: disabled destinations are its state");
  }

  Result<std::string> Metrics() override {
    return Status::Unavailable("metrics need the running service");
  }

  Result<json> Quotas(const std::string&) override {
    return Status::Unavailable(
        "quotas need the running service: tiers and quotas are its configuration");
  }

  Result<json> Pauses() override { return PausesNeedTheService(); }
  Result<json> Pause(const json&) override { return PausesNeedTheService(); }
  Result<json> Resume(const std::string&) override { return PausesNeedTheService(); }

  std::string Describe() const override { return "store " + dir_; }

 private:
  static Status PausesNeedTheService() {
    return Status::Unavailable(
        "pauses need the running service: they are its settings, and it holds what they name");
  }

  static int64_t NowMs() { return ToUnixMillis(SystemClock().WallNow()); }

  Result<json> Summarize(const std::string& key, const storage::DestinationParts& p) {
    json j = {{"platform", p.platform},
              {"tenant", p.tenant},
              {"credential", p.credential},
              {"destination", p.destination},
              {"key", key}};
    uint64_t queued = 0, deferred = 0, in_flight = 0, corrupt = 0;
    int64_t next_ms = 0;
    std::string after_id;
    while (true) {
      auto work = store_->PendingFor(key, after_id, 1000);
      if (!work) {
        return work.error();
      }
      for (const Delivery& d : work->deliveries) {
        queued += d.state == DeliveryState::kQueued;
        deferred += d.state == DeliveryState::kDeferred;
        in_flight += d.state == DeliveryState::kInFlight;
        if (storage::IsWaiting(d.state) && (next_ms == 0 || d.next_attempt_ms < next_ms)) {
          next_ms = d.next_attempt_ms;
        }
        after_id = std::max(after_id, d.id);
      }
      for (const storage::CorruptRecord& c : work->corrupt) {
        ++corrupt;
        after_id = std::max(after_id, c.id);
      }
      if (work->deliveries.size() + work->corrupt.size() < 1000) {
        break;
      }
    }
    j["queued"] = queued;
    j["deferred"] = deferred;
    j["in_flight"] = in_flight;
    if (corrupt > 0) {
      j["corrupt"] = corrupt;  // unreadable records the service moves to dead when it reads them
    }
    if (next_ms != 0) {
      j["next_eligible_ms"] = next_ms;
    }
    return j;
  }

  std::string dir_;
  std::unique_ptr<storage::QueueStore> store_;
};

}  // namespace

Result<std::unique_ptr<Backend>> OpenStoreBackend(const std::string& data_dir, StoreAccess access) {
  struct stat st {};
  if (access == StoreAccess::kNone || data_dir.empty() || ::stat(data_dir.c_str(), &st) != 0 ||
      !S_ISDIR(st.st_mode)) {
    return Status::NotFound("no store at '" + data_dir + "'");
  }
  // The store's secrets key, when there is one to find without the service's config:
  // RELAY_EGRESS_SECRETS_KEY, else the key the service generated in the data directory. (With
  // server.secrets_key_file elsewhere, set the variable; a sealed store refuses a writable open
  // without its key.) Never created here.
  storage::StoreOptions options{.path = data_dir};
  const char* env = std::getenv("RELAY_EGRESS_SECRETS_KEY");
  const std::string generated = data_dir + "/" + std::string(storage::kSecretsKeyFileName);
  if ((env != nullptr && *env != '\0') || ::stat(generated.c_str(), &st) == 0) {
    auto key = storage::LoadOrCreateSecretsKey("", env != nullptr ? env : "", data_dir);
    if (!key) {
      return key.error();
    }
    options.secrets_key = key->key;
  }
  auto store = access == StoreAccess::kReadOnly
                   ? storage::OpenRocksQueueStoreReadOnly(options)
                   : storage::OpenRocksQueueStore(options, ToUnixMillis(SystemClock().WallNow()));
  if (!store) {
    if (store.error().code() == Status::Code::kBusy) {
      return Status::Busy("store " + data_dir +
                          " is in use by another process; stop it or use --server");
    }
    return store.error();
  }
  return std::unique_ptr<Backend>(std::make_unique<StoreBackend>(data_dir, std::move(*store)));
}

}  // namespace egress::cli
