#pragma once

#include <string>
#include <vector>

namespace egress::storage {

// Reads a closed RocksDB store at `path` (read-only, with RocksDB itself, not the store) and
// returns every inconsistency between its records and its indexes, empty when there is none:
// each entry of the due, dest, state and done families must be one the store's writer derives
// from an existing record (IndexEntriesOf), and each record must have all of its own; each
// idempotency key must name an existing record with that tenant and key; the per-state counters
// and the per-tenant stored bytes must equal the records counted. The store must be
// closed (a lease is in memory only, so the disk is what is checked).
std::vector<std::string> AuditStore(const std::string& path);

}  // namespace egress::storage
