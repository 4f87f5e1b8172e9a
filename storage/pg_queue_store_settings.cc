// The PgQueueStore's settings (sealed at rest under StoreOptions::secrets_key, as the RocksDB
// store's) and the check of the destinations' seal at open.

#include <fmt/format.h>

#include "dispatcher/base/redact.h"
#include "storage/pg_queue_store_internal.h"
#include "storage/setting_seal.h"

namespace egress::storage {
namespace {

// The marker's value: this text sealed (as the RocksDB store's), so that a start with another
// key is refused at once.
constexpr std::string_view kMarkerText = "~sealed1:relay-egress destinations";

// The settings' version (QueueStore::SettingsVersion): the egress_meta row 'settings_version',
// its value the number as 8 bytes big-endian (int8send), moved in the transaction of each
// PutSetting. A row of egress_meta, which schema version 1 has, rather than a table of its own:
// the schema's version stays as it is. kVersionOf reads the row's value as a number.
constexpr std::string_view kVersionOf = "('x' || encode(egress_meta.value, 'hex'))::bit(64)::int8";

// Adds one to the version (1 when there is no row yet). Takes the row's lock until COMMIT:
// concurrent PutSettings of every node take turns here, and each commits a version of its own.
std::string BumpVersionSql() {
  return fmt::format(
      "INSERT INTO egress_meta (key, value) VALUES ('settings_version', int8send(1)) "
      "ON CONFLICT (key) DO UPDATE SET value = int8send({} + 1)",
      kVersionOf);
}

bool SealedKey(const StoreOptions& options, std::string_view key) {
  for (const std::string& prefix : options.sealed_setting_prefixes) {
    if (key.starts_with(prefix)) {
      return true;
    }
  }
  return false;
}

}  // namespace

Status PgQueueStore::PutSetting(const std::string& key, const std::string& value) {
  auto use = UsePool();
  if (Status s = CheckOpen(); !s.ok()) {
    return s;
  }
  std::string stored = value;
  if (!value.empty() && options_.secrets_key && SealedKey(options_, key)) {
    Result<std::string> sealed = SealSetting(*options_.secrets_key, key, value);
    if (!sealed) {
      return sealed.error();
    }
    stored = std::move(*sealed);
  }
  auto c = Take();
  if (!c) {
    return c.error();
  }
  // No delivery rows: Stats().writes does not count it, as before the version was written.
  PgWrite w;
  return Transact(*c, w, [&]() -> Status {
    auto r = value.empty()
                 ? Q(*c, "DELETE FROM egress_settings WHERE key = $1", PgParams().Bytes(key))
                 : Q(*c,
                     "INSERT INTO egress_settings (key, value) VALUES ($1, $2) "
                     "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                     PgParams().Bytes(key).Bytes(stored));
    if (!r) {
      // The error names the statement, never the key or the value.
      return r.error();
    }
    auto bumped = Q(*c, BumpVersionSql());
    return bumped ? Status::Ok() : bumped.error();
  });
}

Result<uint64_t> PgQueueStore::SettingsVersion() {
  auto c = Hold();
  if (!c) {
    return c.error();
  }
  auto r =
      Q(*c, fmt::format("SELECT {} FROM egress_meta WHERE key = 'settings_version'", kVersionOf));
  if (!r) {
    return r.error();
  }
  if (r->rows() == 0) {
    return uint64_t{0};  // no PutSetting yet
  }
  if (Status s = r->CheckInt(0); !s.ok()) {
    return s;
  }
  return static_cast<uint64_t>(r->Int(0, 0));
}

Result<std::vector<std::pair<std::string, std::string>>> PgQueueStore::ListSettings(
    const std::string& prefix) {
  auto c = Hold();
  if (!c) {
    return c.error();
  }
  auto r = Q(*c,
             "SELECT key, value FROM egress_settings WHERE substring(key from 1 for $2) = $1 "
             "ORDER BY key",
             PgParams().Bytes(prefix).Int32(static_cast<int32_t>(prefix.size())));
  if (!r) {
    return r.error();
  }
  std::vector<std::pair<std::string, std::string>> out;
  for (int i = 0; i < r->rows(); ++i) {
    std::string key(r->Bytes(i, 0));
    std::string value(r->Bytes(i, 1));
    if (IsSealed(value)) {
      if (!options_.secrets_key) {
        return Status::FailedPrecondition("setting " + RedactText(key) +
                                          " is sealed and no secrets key is configured");
      }
      Result<std::string> opened = OpenSetting(*options_.secrets_key, key, value);
      if (!opened) {
        return opened.error();
      }
      value = std::move(*opened);
    }
    out.emplace_back(std::move(key), std::move(value));
  }
  return out;
}

Status PgQueueStore::SealSettings() {
  if (!options_.secrets_key) {
    return Status::Ok();
  }
  std::vector<std::pair<std::string, std::string>> plaintext;
  {
    auto use = UsePool();
    auto c = Take();
    if (!c) {
      return c.error();
    }
    for (const std::string& prefix : options_.sealed_setting_prefixes) {
      auto r =
          Q(*c, "SELECT key, value FROM egress_settings WHERE substring(key from 1 for $2) = $1",
            PgParams().Bytes(prefix).Int32(static_cast<int32_t>(prefix.size())));
      if (!r) {
        return r.error();
      }
      for (int i = 0; i < r->rows(); ++i) {
        if (!IsSealed(r->Bytes(i, 1))) {
          plaintext.emplace_back(r->Bytes(i, 0), r->Bytes(i, 1));
        }
      }
    }
  }
  // Every sealed one must open with this key: a wrong key stops the start, naming the setting.
  for (const std::string& prefix : options_.sealed_setting_prefixes) {
    if (auto opened = ListSettings(prefix); !opened) {
      return opened.error();
    }
  }
  for (const auto& [key, value] : plaintext) {
    if (Status s = PutSetting(key, value); !s.ok()) {
      return s;
    }
  }
  // TODO(pg-store): the plaintext versions stay in dead tuples and the WAL until VACUUM and
  // checkpoints recycle them; the RocksDB store flushes and compacts at this point.
  return Status::Ok();
}

Status PgQueueStore::CheckDestinationSeal() {
  auto use = UsePool();
  auto c = Take();
  if (!c) {
    return c.error();
  }
  auto marker =
      Q(*c, "SELECT value FROM egress_meta WHERE key = 'destinations_sealed'", PgParams());
  if (!marker) {
    return marker.error();
  }
  if (!seal_.has_key()) {
    if (marker->rows() > 0) {
      return Status::FailedPrecondition(
          "the store's destinations are sealed: start with the secrets key it was written with "
          "(server.secrets_key_file or RELAY_EGRESS_SECRETS_KEY)");
    }
    return Status::Ok();
  }
  if (marker->rows() > 0) {
    Result<std::string> opened = seal_.Open(marker->Bytes(0, 0));
    if (!opened || *opened != kMarkerText) {
      return Status::Corruption(
          "the store's destinations were sealed with another secrets key (server.secrets_key_file "
          "or RELAY_EGRESS_SECRETS_KEY must be the key this store was written with)");
    }
    return Status::Ok();
  }
  // No marker: every record was written without a key. Sealing them in place (as the RocksDB
  // store's SealDestinations does) is not written yet; an empty store just takes the marker.
  auto any = Q(*c, "SELECT 1 FROM egress_deliveries LIMIT 1", PgParams());
  if (!any) {
    return any.error();
  }
  if (any->rows() > 0) {
    // TODO(pg-store): seal the destinations of records written without a key.
    return Status::FailedPrecondition(
        "the PostgreSQL store holds deliveries written without a secrets key; sealing them at "
        "open is not supported yet: start without a key, or on an empty store");
  }
  auto put = Q(*c,
               "INSERT INTO egress_meta (key, value) VALUES ('destinations_sealed', $1) "
               "ON CONFLICT (key) DO NOTHING",
               PgParams().Bytes(seal_.Stored(kMarkerText)));
  return put ? Status::Ok() : put.error();
}

}  // namespace egress::storage
