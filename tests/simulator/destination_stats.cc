#include "tests/simulator/destination_stats.h"

#include <algorithm>
#include <iterator>

#include <nlohmann/json.hpp>

#include "tests/simulator/json_text.h"

namespace egress::sim {
namespace {

std::string IdentityKey(const std::string& dest, std::string_view kind, std::string_view identity) {
  std::string key;
  key.reserve(dest.size() + kind.size() + identity.size() + 2);
  key.append(dest).append(1, '\n').append(kind).append(1, '\n').append(identity);
  return key;
}

nlohmann::json ToJsonObject(const DestinationCounters& c) {
  return {{"requests", c.requests},
          {"accepted", c.accepted},
          {"rate_limited", c.rate_limited},
          {"rate_limited_global", c.rate_limited_global},
          {"early", c.early},
          {"duplicates", c.duplicates},
          {"duplicates_prevented", c.duplicates_prevented},
          {"order_violations", c.order_violations},
          {"payloads", c.payloads},
          {"errors", c.errors},
          {"faults", c.faults},
          {"signature_failures", c.signature_failures},
          {"tokens_issued", c.tokens_issued},
          {"expired_tokens", c.expired_tokens}};
}

}  // namespace

void DestinationCounters::Add(const DestinationCounters& o) {
  requests += o.requests;
  accepted += o.accepted;
  rate_limited += o.rate_limited;
  rate_limited_global += o.rate_limited_global;
  early += o.early;
  duplicates += o.duplicates;
  duplicates_prevented += o.duplicates_prevented;
  order_violations += o.order_violations;
  payloads += o.payloads;
  errors += o.errors;
  faults += o.faults;
  signature_failures += o.signature_failures;
  tokens_issued += o.tokens_issued;
  expired_tokens += o.expired_tokens;
}

DestinationCounters& StatsBook::OnRequest(const std::string& dest, SteadyTime now,
                                          std::string_view scope) {
  DestinationCounters& c = counters_[dest];
  ++c.requests;
  bool early = false;
  if (auto it = not_before_.find(dest); it != not_before_.end() && now < it->second) {
    early = true;
  }
  if (!scope.empty()) {
    if (auto it = not_before_.find(std::string(scope));
        it != not_before_.end() && now < it->second) {
      early = true;
    }
  }
  if (early) {
    ++c.early;
  }
  return c;
}

void StatsBook::SetNotBefore(const std::string& key, SteadyTime until) {
  auto [it, inserted] = not_before_.try_emplace(key, until);
  if (!inserted && until > it->second) {
    it->second = until;
  }
}

bool StatsBook::SeenAccepted(const std::string& dest, std::string_view kind,
                             std::string_view identity, SteadyTime now,
                             std::chrono::nanoseconds ttl) {
  auto [it, inserted] = identities_.try_emplace(IdentityKey(dest, kind, identity), Entry{now, {}});
  if (inserted) {
    return false;
  }
  if (now - it->second.at >= ttl) {
    it->second = Entry{now, {}};
    return false;
  }
  return true;
}

std::optional<std::string> StatsBook::AcceptedValue(const std::string& dest, std::string_view kind,
                                                    std::string_view identity, SteadyTime now,
                                                    std::chrono::nanoseconds ttl) const {
  auto it = identities_.find(IdentityKey(dest, kind, identity));
  if (it == identities_.end() || now - it->second.at >= ttl) {
    return std::nullopt;
  }
  return it->second.value;
}

void StatsBook::RememberValue(const std::string& dest, std::string_view kind,
                              std::string_view identity, std::string value, SteadyTime now) {
  identities_[IdentityKey(dest, kind, identity)] = Entry{now, std::move(value)};
}

bool StatsBook::CheckOrder(const std::string& dest, const std::string& ordering_key, int64_t seq) {
  auto [it, inserted] = last_seq_.try_emplace(ordering_key, seq);
  if (inserted) {
    return true;
  }
  if (seq < it->second) {
    ++counters_[dest].order_violations;
    return false;
  }
  it->second = seq;
  return true;
}

DestinationCounters StatsBook::Totals() const {
  DestinationCounters total;
  for (const auto& [dest, c] : counters_) {
    total.Add(c);
  }
  return total;
}

std::string StatsBook::ToJson() const {
  nlohmann::json dests = nlohmann::json::object();
  for (const auto& [dest, c] : counters_) {
    dests[dest] = ToJsonObject(c);
  }
  nlohmann::json protocols = nlohmann::json::object();
  for (SimProtocol p : {SimProtocol::kHttp1, SimProtocol::kHttp1Tls, SimProtocol::kHttp2Tls}) {
    protocols[std::string(ProtocolName(p))] = protocols_[static_cast<size_t>(p)];
  }
  nlohmann::json out = {
      {"destinations", dests},
      {"totals", ToJsonObject(Totals())},
      {"protocols", protocols},
      {"loop_late_max_ms",
       std::chrono::duration_cast<std::chrono::milliseconds>(loop_late_max_).count()}};
  return JsonText(out);
}

void StatsBook::Clear() {
  counters_.clear();
  not_before_.clear();
  identities_.clear();
  last_seq_.clear();
  std::fill(std::begin(protocols_), std::end(protocols_), 0);
  loop_late_max_ = std::chrono::nanoseconds(0);
}

}  // namespace egress::sim
