#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>

#include <openssl/types.h>

namespace egress::service {

// Where a listing of destinations stopped, and goes on from (GET /v1/destinations, docs/api.md,
// "Destinations"): the last destination looked at, by its place in the order listed.
struct DestinationPosition {
  int64_t deferral_ms = 0;  // by oldest deferral only: when it was deferred (0: never)
  std::string tenant;
  uint64_t hash = 0;
};

// The destinations with work in two orders, for listing them a page at a time in bounded steps
// (docs/api.md, "Destinations"):
//   - by key: by tenant, then by a keyed 64-bit hash of the destination key (SipHash-2-4, the
//     keyed hash made for hash tables, under a key drawn when the index is made; much cheaper per
//     key than a one-shot HMAC-SHA256, which every destination a restart registers pays). A walk by
//     position lists each destination at most once and misses none that stays in the index all
//     along, whatever comes and goes meanwhile; a tenant's destinations are one range; a position
//     names no destination (the hash is keyed, and a secret destination's key must not leave).
//   - by oldest deferral, oldest first (destinations with no deferral are not in this order): what
//     an operator looks at first; within one tenant, a range of its own. A destination whose oldest
//     deferral changes moves, so a walk in this order may list one twice or not at all: a view, not
//     a walk.
// `epoch` (drawn with the key) tells positions of this index from those of another process.
// Holds pointers to the keys and tenants it is given: they must outlive their entries (the
// DeliveryLoop's map nodes). Not thread-safe: the loop owns it.
class DestinationIndex {
 public:
  DestinationIndex();

  // Adds a destination; returns its hash. `key` and `tenant` must stay where they are until
  // Remove.
  uint64_t Add(const std::string* key, const std::string* tenant);
  void Remove(const std::string* key, const std::string* tenant, uint64_t hash);
  // The destination's oldest deferral (Unix ms; 0: none) changed from `before` to `after`.
  void MoveDeferral(const std::string* key, const std::string* tenant, uint64_t hash,
                    int64_t before, int64_t after);

  // Calls `visit(key, position)` for destinations after `after` (from the start without it), in
  // the order asked, those of `tenant` only when it is not empty, until `visit` returns false or
  // `max_steps` destinations were visited. Returns the position of the last one visited, or
  // nullopt when the order was walked to its end.
  template <typename Visit>
  std::optional<DestinationPosition> Walk(bool by_deferral, std::string_view tenant,
                                          const std::optional<DestinationPosition>& after,
                                          size_t max_steps, Visit&& visit) const;

  size_t size() const { return by_key_.size(); }
  // The destinations of one tenant: O(1).
  size_t CountOf(const std::string& tenant) const;
  uint64_t epoch() const { return epoch_; }

 private:
  struct Entry {
    int64_t deferral_ms = 0;  // by_deferral_ only
    const std::string* tenant = nullptr;
    uint64_t hash = 0;
    const std::string* key = nullptr;
  };
  struct ByKey {
    bool operator()(const Entry& a, const Entry& b) const;
  };
  struct ByDeferral {
    bool operator()(const Entry& a, const Entry& b) const;
  };
  struct ByTenantDeferral {
    bool operator()(const Entry& a, const Entry& b) const;
  };
  uint64_t Hash(std::string_view key) const;

  inline static const std::string kSmallest_{};
  struct MacFree {
    void operator()(EVP_MAC_CTX* ctx) const;
  };
  std::array<unsigned char, 32> hash_key_{};
  // SipHash keyed with hash_key_'s first 16 bytes, made again for each key from this one
  // context; null when OpenSSL has no SipHash (then an HMAC-SHA256 under the whole key).
  std::unique_ptr<EVP_MAC_CTX, MacFree> siphash_;
  uint64_t epoch_ = 0;
  std::set<Entry, ByKey> by_key_;
  std::set<Entry, ByDeferral> by_deferral_;
  std::set<Entry, ByTenantDeferral> by_tenant_deferral_;
  std::unordered_map<std::string, size_t> per_tenant_;
};

template <typename Visit>
std::optional<DestinationPosition> DestinationIndex::Walk(
    bool by_deferral, std::string_view tenant, const std::optional<DestinationPosition>& after,
    size_t max_steps, Visit&& visit) const {
  // A probe at the position: the entries after it have a greater place (a null key sorts after
  // every key, so entries at an equal place are passed too: a hash collision at a page's end
  // can skip one, with a chance of about n² / 2⁶⁵). From the start of a tenant's range: a probe
  // with the smallest hash and key.
  std::string probe_tenant(after ? after->tenant : std::string(tenant));
  Entry probe{.deferral_ms = after ? after->deferral_ms : 0,
              .tenant = &probe_tenant,
              .hash = after ? after->hash : 0,
              .key = after ? nullptr : &kSmallest_};
  auto walk = [&](const auto& set, auto it) -> std::optional<DestinationPosition> {
    size_t steps = 0;
    for (; it != set.end(); ++it) {
      if (!tenant.empty() && *it->tenant != tenant) {
        return std::nullopt;  // past the tenant's range
      }
      DestinationPosition at{
          .deferral_ms = it->deferral_ms, .tenant = *it->tenant, .hash = it->hash};
      ++steps;
      if (!visit(*it->key, at) || steps >= max_steps) {
        return at;
      }
    }
    return std::nullopt;
  };
  if (by_deferral && tenant.empty()) {
    return walk(by_deferral_, after ? by_deferral_.upper_bound(probe) : by_deferral_.begin());
  }
  if (by_deferral) {
    return walk(by_tenant_deferral_, after ? by_tenant_deferral_.upper_bound(probe)
                                           : by_tenant_deferral_.lower_bound(probe));
  }
  if (after) {
    return walk(by_key_, by_key_.upper_bound(probe));
  }
  return walk(by_key_, tenant.empty() ? by_key_.begin() : by_key_.lower_bound(probe));
}

}  // namespace egress::service
