#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/tenant_config.h"
#include "dispatcher/base/clock.h"
#include "dispatcher/pacing/sliding_window_counter.h"
#include "dispatcher/service/quota_ledger.h"
#include "storage/delivery.h"

namespace egress::service {

// Tiers, each tenant's tier and quotas, and the admission of deliveries against the quotas
// (docs/costs.md). Everything is held in memory: a lookup reads no store. A tenant's quotas are
// its tier's, overlaid by its own of the same name (the config's, or those put through the admin
// API, which replace them). Intake charges an estimate (each delivery's cost) with Charge, which
// writes the charges into the deliveries and reserves their units until the write is done
// (Release); the counts themselves come from the ledger. Loop thread only.
class QuotaBook {
 public:
  struct Options {
    std::map<std::string, config::TierConfig> tiers;
    std::map<std::string, std::string> tenant_tiers;        // tenant -> tier (known)
    std::map<std::string, config::QuotaMap> tenant_quotas;  // the config's own quotas
  };
  // `ledger` and `clock` must outlive the book.
  QuotaBook(const Clock& clock, QuotaLedger& ledger, Options options);

  // One quota in force for a tenant.
  struct Quota {
    std::string name;
    config::QuotaConfig config;
    bool own = false;  // the tenant's own, not its tier's
  };
  // The tenant's quotas, by name.
  std::vector<Quota> QuotasOf(const std::string& tenant) const;
  // The tenant's tier; empty when none.
  const std::string& TierOf(const std::string& tenant) const;
  const std::map<std::string, config::TierConfig>& tiers() const { return options_.tiers; }
  // Tenants that have quotas of their own or a tier, in name order.
  std::vector<std::string> Tenants() const;
  // Replaces the tenant's own quotas (PUT .../quotas); nullopt goes back to the config's.
  void SetOwnQuotas(const std::string& tenant, std::optional<config::QuotaMap> quotas);
  // Replaces every tenant's own quotas put by SetOwnQuotas with `quotas`, by tenant: as
  // SetOwnQuotas(tenant, quotas[tenant]) for each tenant in it and SetOwnQuotas(tenant, nullopt)
  // for every other.
  void ReplaceOwnQuotas(std::map<std::string, config::QuotaMap> quotas);

  // A quota's state at now.
  struct Usage {
    int64_t used = 0;            // counted units plus those reserved by writes not yet done
    int64_t remaining = 0;       // limit - used, at least 0
    int64_t reset_after_ms = 0;  // until every counted unit has left the window
  };
  Usage UsageOf(const std::string& tenant, const Quota& quota);

  // Units reserved by one intake request until its write is done.
  using Reservation = std::vector<std::pair<std::string, int64_t>>;  // quota id, units
  // Why an item was refused: the quota and its decision at now.
  struct Denial {
    Quota quota;
    pacing::WindowDecision decision;
  };
  // Charges one item (its parts, one tenant) to every quota of the tenant that applies to each
  // part's platform: when all fit, fills each part's `charges`, adds the units to `reserved` and
  // returns nullopt; else returns the first quota over its limit and changes nothing. A shadow
  // quota never refuses: one the item would be over is named in `shadow_refused` (when given)
  // and not charged (as an enforced one would not have counted it), one it fits is charged.
  std::optional<Denial> Charge(std::vector<storage::NewDelivery>& parts, Reservation& reserved,
                               std::vector<std::string>* shadow_refused = nullptr);
  // Gives back what `reserved` holds (once the write that carries the charges is done, whatever
  // its outcome: the ledger counts what was stored).
  void Release(const Reservation& reserved);

 private:
  const Clock& clock_;
  QuotaLedger& ledger_;
  Options options_;
  std::map<std::string, config::QuotaMap> admin_quotas_;  // SetOwnQuotas
  std::map<std::string, int64_t> pending_;                // quota id -> units reserved
};

}  // namespace egress::service
