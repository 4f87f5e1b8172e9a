#pragma once

#include <string>
#include <vector>

namespace egress::storage {

// Reads the PostgreSQL store in the database at `url` (a connection of its own, plain SQL, not
// the store) and returns every inconsistency between its records and what it keeps beside them,
// empty when there is none:
//   - each row's record decodes, holds the row's id, and the row's columns (tenant, dest_key,
//     shard, state, due_ms, finished_ms, idem_key) are what the store derives from it; no row is
//     in_flight (a lease is never written);
//   - the counters (summed over their slots) of every state, tenant backlog, destination and
//     non-terminal state, and tenant's stored bytes equal the records counted, and none is
//     negative; quota slices are left out (a refund of a slice that stopped counting is not
//     written, so they do not follow from the records);
//   - each idempotency entry names an existing record with that tenant and key, with the finish
//     time of a finished one (NULL for a live one), and each live record with a key holds its
//     entry.
// The store must be closed (a lease is in memory only, so the database is what is checked).
// A failed statement is reported as a problem too.
std::vector<std::string> AuditPgStore(const std::string& url);

}  // namespace egress::storage
