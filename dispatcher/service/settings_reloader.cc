#include "dispatcher/service/settings_reloader.h"

#include <optional>
#include <utility>

#include <boost/asio/post.hpp>

#include "dispatcher/service/event_log.h"

namespace egress::service {

namespace asio = boost::asio;

namespace {

// A failure that goes on is logged once a minute at the default tick, not every second.
constexpr int kLogEveryFailures = 60;

}  // namespace

SettingsReloader::SettingsReloader(asio::io_context& io, asio::any_io_executor storage,
                                   storage::QueueStore& store, Apply apply, Options options)
    : io_(io),
      storage_(std::move(storage)),
      store_(store),
      apply_(std::move(apply)),
      options_(options),
      timer_(io),
      alive_(std::make_shared<bool>(true)) {}

SettingsReloader::~SettingsReloader() { *alive_ = false; }

void SettingsReloader::Start(uint64_t applied) {
  applied_ = applied;
  Arm();
}

void SettingsReloader::Stop() {
  stopped_ = true;
  timer_.cancel();
}

void SettingsReloader::BeginLocalChange() {
  ++local_changes_;
  ++local_open_;
}

void SettingsReloader::EndLocalChange() { --local_open_; }

void SettingsReloader::Arm() {
  timer_.expires_after(options_.every);
  timer_.async_wait([this, alive = alive_](const boost::system::error_code& ec) {
    if (ec || !*alive || stopped_) {
      return;
    }
    Tick();
  });
}

void SettingsReloader::Tick() {
  if (local_open_ > 0) {
    Arm();  // its write moves the version: read after it
    return;
  }
  const uint64_t changes_before = local_changes_;
  asio::post(storage_, [this, &store = store_, &io = io_, alive = alive_, applied = applied_,
                        changes_before] {
    Read read = [&]() -> Read {
      auto version = store.SettingsVersion();
      if (!version) {
        return version.error();
      }
      if (*version == applied) {
        return std::optional<StoredSettings>();
      }
      auto settings = ReadStoredSettings(store);
      if (!settings) {
        return settings.error();
      }
      return std::optional<StoredSettings>(std::move(*settings));
    }();
    asio::post(io, [this, alive, changes_before, read = std::move(read)]() mutable {
      if (*alive) {
        Finish(changes_before, std::move(read));
      }
    });
  });
}

void SettingsReloader::Finish(uint64_t changes_before, Read read) {
  if (stopped_) {
    return;
  }
  if (!read) {
    Failed(read.error());
  } else if (!read->has_value()) {
    failures_ = 0;  // nothing moved
  } else if (local_changes_ != changes_before || local_open_ > 0) {
    // Read while this node changed a setting: it may predate that write. The write moved the
    // version, so the next tick reads again.
  } else if (Status applied = apply_(**read); !applied.ok()) {
    Failed(applied);
  } else {
    const StoredSettings& s = **read;
    applied_ = s.version;
    failures_ = 0;
    LogEvent(LogLevel::kInfo, "settings_reloaded",
             {{"version", s.version},
              {"credentials", s.credentials.size()},
              {"api_key_tenants", s.api_keys.size()},
              {"quota_tenants", s.quotas.size()},
              {"override_tenants", s.overrides.size()}});
  }
  Arm();
}

void SettingsReloader::Failed(const Status& error) {
  if (failures_ % kLogEveryFailures == 0) {
    // The message names a setting by its key at most, never a value.
    LogEvent(LogLevel::kWarn, "settings_reload_failed",
             {{"error", error.ToString()},
              {"failures", failures_ + 1},
              {"note", "the settings in force stay; retrying"}});
  }
  ++failures_;
}

}  // namespace egress::service
