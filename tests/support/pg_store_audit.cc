#include "tests/support/pg_store_audit.h"

#include <map>
#include <memory>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "storage/counter_deltas.h"
#include "storage/counter_moves.h"
#include "storage/delivery_codec.h"
#include "storage/index_keys.h"
#include "storage/pg_connection.h"
#include "storage/pg_schema.h"

namespace egress::storage {
namespace {

constexpr int64_t kChunk = 256;

std::string Printable(std::string_view bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  return out;
}

// What the audit keeps of one record.
struct Record {
  std::string tenant;
  std::string idempotency_key;
  DeliveryState state = DeliveryState::kQueued;
  int64_t finished_ms = 0;
};

// The columns of one row against the record it holds; adds the record's counter moves.
void CheckRow(const PgResult& r, int i, std::vector<std::string>& problems,
              std::map<std::string, Record>& records, CounterDeltas& expected) {
  const std::string id(r.Bytes(i, 0));
  const std::string_view record = r.Bytes(i, 8);
  Result<Delivery> d = DecodeDelivery(record);
  if (!d) {
    problems.push_back(fmt::format("record {}: {}", id, d.error().ToString()));
    return;
  }
  if (d->id != id) {
    problems.push_back(fmt::format("record {} holds id {}", id, Printable(d->id)));
  }
  // The record holds the destination as stored, from which the store derives its key.
  const std::string dest = DestinationKeyOf(*d);
  auto column = [&](std::string_view name, const std::string& found, const std::string& want) {
    if (found != want) {
      problems.push_back(fmt::format("row {}: {} is {}, its record says {}", id, name,
                                     Printable(found), Printable(want)));
    }
  };
  column("tenant", std::string(r.Bytes(i, 1)), d->tenant);
  column("dest_key", std::string(r.Bytes(i, 2)), dest);
  column("shard", std::to_string(r.Int(i, 3)), std::to_string(PgShardOf(dest)));
  column("state", std::to_string(r.Int(i, 4)), std::to_string(static_cast<int>(d->state)));
  column("due_ms", std::to_string(r.Int(i, 5)), std::to_string(d->next_attempt_ms));
  column("finished_ms", std::to_string(r.Int(i, 6)), std::to_string(d->finished_ms));
  column("idem_key", r.IsNull(i, 7) ? "NULL" : "'" + std::string(r.Bytes(i, 7)) + "'",
         d->idempotency_key.empty() ? "NULL" : "'" + d->idempotency_key + "'");
  if (d->state == DeliveryState::kInFlight) {
    problems.push_back(fmt::format("row {} is in_flight at rest (a lease is never written)", id));
  }
  AddCounterMoves(nullptr, &*d, dest, expected);
  expected.Add(StoredBytesKey(d->tenant), static_cast<int64_t>(id.size() + record.size()));
  records.emplace(id, Record{d->tenant, d->idempotency_key, d->state, d->finished_ms});
}

// The derivable counters (every one but the quota slices) against the records.
void CheckCounters(PgConnection& c, const CounterDeltas& expected,
                   std::vector<std::string>& problems) {
  auto sums = c.Exec(
      "SELECT key, sum(n)::int8 FROM egress_counters WHERE NOT (key >= 'quota/'::bytea AND "
      "key < 'quota0'::bytea) GROUP BY key ORDER BY key");
  if (!sums) {
    problems.push_back("counters: " + sums.error().ToString());
    return;
  }
  std::map<std::string, int64_t> found;
  for (int i = 0; i < sums->rows(); ++i) {
    const int64_t n = sums->Int(i, 1);
    if (n != 0) {
      found.emplace(sums->Bytes(i, 0), n);
    }
  }
  std::map<std::string, int64_t> want;
  for (const auto& [key, n] : expected.deltas()) {
    if (n != 0) {
      want.emplace(key, n);
    }
  }
  for (const auto& [key, n] : found) {
    auto it = want.find(key);
    if (it == want.end() || it->second != n) {
      problems.push_back(fmt::format("counter {} is {}, records {}", Printable(key), n,
                                     it == want.end() ? 0 : it->second));
    }
  }
  for (const auto& [key, n] : want) {
    if (!found.contains(key)) {
      problems.push_back(fmt::format("counter {} is 0, records {}", Printable(key), n));
    }
  }
}

void CheckIdempotency(PgConnection& c, const std::map<std::string, Record>& records,
                      std::vector<std::string>& problems) {
  auto rows = c.Exec("SELECT tenant, key, id, finished_ms FROM egress_idem ORDER BY tenant, key");
  if (!rows) {
    problems.push_back("idempotency: " + rows.error().ToString());
    return;
  }
  std::map<std::pair<std::string, std::string>, std::string> holder;
  for (int i = 0; i < rows->rows(); ++i) {
    const std::string tenant(rows->Bytes(i, 0));
    const std::string key(rows->Bytes(i, 1));
    const std::string id(rows->Bytes(i, 2));
    const std::optional<int64_t> finished =
        rows->IsNull(i, 3) ? std::nullopt : std::optional<int64_t>(rows->Int(i, 3));
    holder.emplace(std::pair(tenant, key), id);
    const std::string what =
        fmt::format("idempotency key {}/{}", Printable(tenant), Printable(key));
    auto it = records.find(id);
    if (it == records.end()) {
      problems.push_back(fmt::format("{} names missing {}", what, id));
      continue;
    }
    const Record& d = it->second;
    if (d.tenant != tenant || d.idempotency_key != key) {
      problems.push_back(fmt::format("{} names {}, whose key differs", what, id));
      continue;
    }
    const std::optional<int64_t> want =
        IsTerminal(d.state) ? std::optional<int64_t>(d.finished_ms) : std::nullopt;
    if (finished != want) {
      problems.push_back(fmt::format("{} of {} has finished_ms {}, the record {}", what, id,
                                     finished ? std::to_string(*finished) : "NULL",
                                     want ? std::to_string(*want) : "NULL"));
    }
  }
  for (const auto& [id, d] : records) {
    if (d.idempotency_key.empty() || IsTerminal(d.state)) {
      continue;  // a finished delivery's key may have been released
    }
    auto it = holder.find(std::pair(d.tenant, d.idempotency_key));
    if (it == holder.end() || it->second != id) {
      problems.push_back(fmt::format("live {} does not hold its idempotency key {}", id,
                                     Printable(d.idempotency_key)));
    }
  }
}

}  // namespace

std::vector<std::string> AuditPgStore(const std::string& url) {
  std::vector<std::string> problems;
  auto c = PgConnection::Connect(url);
  if (!c) {
    return {"connect: " + c.error().ToString()};
  }
  std::map<std::string, Record> records;
  CounterDeltas expected;
  std::string last;
  for (;;) {
    auto r = (*c)->Exec(
        "SELECT id, tenant, dest_key, shard, state, due_ms, finished_ms, idem_key, record "
        "FROM egress_deliveries WHERE id > $1 ORDER BY id LIMIT $2",
        PgParams().Text(last).Int64(kChunk));
    if (!r) {
      problems.push_back("scan: " + r.error().ToString());
      return problems;
    }
    for (int i = 0; i < r->rows(); ++i) {
      CheckRow(*r, i, problems, records, expected);
    }
    if (r->rows() < kChunk) {
      break;
    }
    last = std::string(r->Bytes(r->rows() - 1, 0));
  }
  CheckCounters(**c, expected, problems);
  CheckIdempotency(**c, records, problems);
  return problems;
}

}  // namespace egress::storage
