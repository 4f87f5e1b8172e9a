#include "dispatcher/service/quota_book.h"

#include <algorithm>
#include <set>

namespace egress::service {
namespace {

std::string QuotaKey(const std::string& tenant, const std::string& quota) {
  return tenant + '\x1f' + quota;
}

bool Applies(const config::QuotaConfig& q, const std::string& platform) {
  return q.platforms.empty() ||
         std::find(q.platforms.begin(), q.platforms.end(), platform) != q.platforms.end();
}

pacing::WindowShape ShapeOf(const config::QuotaConfig& q) {
  return pacing::WindowShape::Of(q.window.count());
}

}  // namespace

QuotaBook::QuotaBook(const Clock& clock, QuotaLedger& ledger, Options options)
    : clock_(clock), ledger_(ledger), options_(std::move(options)) {}

std::vector<QuotaBook::Quota> QuotaBook::QuotasOf(const std::string& tenant) const {
  std::map<std::string, Quota> merged;
  const std::string& tier = TierOf(tenant);
  if (auto t = options_.tiers.find(tier); !tier.empty() && t != options_.tiers.end()) {
    for (const auto& [name, q] : t->second.quotas) {
      merged[name] = Quota{name, q, false};
    }
  }
  const config::QuotaMap* own = nullptr;
  if (auto a = admin_quotas_.find(tenant); a != admin_quotas_.end()) {
    own = &a->second;
  } else if (auto c = options_.tenant_quotas.find(tenant); c != options_.tenant_quotas.end()) {
    own = &c->second;
  }
  if (own != nullptr) {
    for (const auto& [name, q] : *own) {
      merged[name] = Quota{name, q, true};
    }
  }
  std::vector<Quota> out;
  out.reserve(merged.size());
  for (auto& [name, q] : merged) {
    out.push_back(std::move(q));
  }
  return out;
}

const std::string& QuotaBook::TierOf(const std::string& tenant) const {
  static const std::string kNone;
  auto it = options_.tenant_tiers.find(tenant);
  return it == options_.tenant_tiers.end() ? kNone : it->second;
}

std::vector<std::string> QuotaBook::Tenants() const {
  std::set<std::string> names;
  for (const auto& [tenant, tier] : options_.tenant_tiers) {
    names.insert(tenant);
  }
  for (const auto& [tenant, q] : options_.tenant_quotas) {
    names.insert(tenant);
  }
  for (const auto& [tenant, q] : admin_quotas_) {
    names.insert(tenant);
  }
  return {names.begin(), names.end()};
}

void QuotaBook::SetOwnQuotas(const std::string& tenant, std::optional<config::QuotaMap> quotas) {
  if (quotas) {
    admin_quotas_[tenant] = std::move(*quotas);
  } else {
    admin_quotas_.erase(tenant);
  }
}

void QuotaBook::ReplaceOwnQuotas(std::map<std::string, config::QuotaMap> quotas) {
  admin_quotas_ = std::move(quotas);
}

QuotaBook::Usage QuotaBook::UsageOf(const std::string& tenant, const Quota& quota) {
  const int64_t now_ms = ToUnixMillis(clock_.WallNow());
  const pacing::SlidingWindowCounter counter = ledger_.Usage(tenant, quota.name, now_ms);
  int64_t pending = 0;
  if (auto it = pending_.find(QuotaKey(tenant, quota.name)); it != pending_.end()) {
    pending = it->second;
  }
  const pacing::WindowDecision d = counter.Decide(now_ms, 0, quota.config.limit);
  Usage u;
  u.used = d.used + pending;
  u.remaining = std::max<int64_t>(0, quota.config.limit - u.used);
  u.reset_after_ms = d.reset_after_ms;
  return u;
}

std::optional<QuotaBook::Denial> QuotaBook::Charge(std::vector<storage::NewDelivery>& parts,
                                                   Reservation& reserved,
                                                   std::vector<std::string>* shadow_refused) {
  if (parts.empty()) {
    return std::nullopt;
  }
  const std::string& tenant = parts.front().tenant;
  const std::vector<Quota> quotas = QuotasOf(tenant);
  if (quotas.empty()) {
    return std::nullopt;
  }
  const int64_t now_ms = ToUnixMillis(clock_.WallNow());
  std::vector<std::pair<const Quota*, int64_t>> charged;
  std::vector<std::string> shadow;  // shadow quotas the item would be over
  for (const Quota& q : quotas) {
    int64_t units = 0;
    for (const storage::NewDelivery& part : parts) {
      if (Applies(q.config, part.platform)) {
        units += part.cost;
      }
    }
    if (units == 0) {
      continue;
    }
    const std::string key = QuotaKey(tenant, q.name);
    int64_t pending = 0;
    if (auto it = pending_.find(key); it != pending_.end()) {
      pending = it->second;
    }
    pacing::WindowDecision d =
        ledger_.Usage(tenant, q.name, now_ms).Decide(now_ms, units + pending, q.config.limit);
    if (!d.allowed && q.config.shadow) {
      shadow.push_back(q.name);
      continue;
    }
    if (!d.allowed) {
      d.used += pending;
      if (units > q.config.limit) {
        d.retry_after_ms = -1;
      } else if (units + pending > q.config.limit) {
        // Only the units of the intake writes under way stand in the way: no stored slice
        // leaving makes room, theirs will (they are charged to the slice of now).
        d.retry_after_ms = ShapeOf(q.config).ExpiryOf(now_ms) - now_ms;
      }
      return Denial{q, d};
    }
    charged.emplace_back(&q, units);
  }
  for (const auto& [q, units] : charged) {
    const pacing::WindowShape shape = ShapeOf(q->config);
    const int64_t expires_ms = shape.ExpiryOf(now_ms);
    for (storage::NewDelivery& part : parts) {
      if (Applies(q->config, part.platform)) {
        part.charges.push_back(storage::QuotaCharge{q->name, shape.window_ms, shape.slice_ms,
                                                    expires_ms, static_cast<int64_t>(part.cost)});
      }
    }
    const std::string key = QuotaKey(tenant, q->name);
    pending_[key] += units;
    reserved.emplace_back(key, units);
  }
  if (shadow_refused != nullptr) {
    shadow_refused->insert(shadow_refused->end(), shadow.begin(), shadow.end());
  }
  return std::nullopt;
}

void QuotaBook::Release(const Reservation& reserved) {
  for (const auto& [key, units] : reserved) {
    auto it = pending_.find(key);
    if (it == pending_.end()) {
      continue;
    }
    it->second -= units;
    if (it->second <= 0) {
      pending_.erase(it);
    }
  }
}

}  // namespace egress::service
