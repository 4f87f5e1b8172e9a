#include "adapters/rate_limit_headers.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <vector>

#include "adapters/header_list.h"
#include "adapters/header_number.h"
#include "adapters/http_date.h"

namespace egress::adapters {
namespace {

constexpr double kEpochSecondsFloor = 1e9;        // 2001-09-09T01:46:40Z
constexpr double kEpochMillisFloor = 1e12;        // The same instant in milliseconds.
constexpr double kMaxCount = 9007199254740992.0;  // 2^53: exact in a double.
constexpr size_t kMaxLabelLength = 128;

// One header family's view of the budget.
struct Budget {
  std::optional<int64_t> limit;
  std::optional<int64_t> remaining;
  std::optional<WallTime> reset_at;
  std::optional<Millis> reset_after;
};

// Everything read from the header lines, before families are merged.
struct Collected {
  WallTime received_at;
  std::optional<Millis> retry_after;
  Budget x;       // X-RateLimit-*
  Budget ietf;    // RateLimit, RateLimit-Policy
  Budget legacy;  // RateLimit-Limit / -Remaining / -Reset
  std::optional<std::string> bucket;
  std::optional<std::string> resource;
  bool global = false;
  std::optional<RateLimitHeaders::Scope> scope;
  std::vector<HeaderListMember> ratelimit;  // Views into the header values.
  std::vector<HeaderListMember> policies;
};

template <class T>
void KeepMin(std::optional<T>& slot, T v) {
  slot = slot.has_value() ? std::min(*slot, v) : v;
}

template <class T>
void KeepMax(std::optional<T>& slot, T v) {
  slot = slot.has_value() ? std::max(*slot, v) : v;
}

// A delay in seconds as milliseconds within [0, kMaxRateLimitWait].
Millis ClampDelay(double seconds) {
  double cap_s = std::chrono::duration<double>(kMaxRateLimitWait).count();
  if (!(seconds > 0)) {
    return Millis(0);
  }
  if (seconds >= cap_s) {
    return kMaxRateLimitWait;
  }
  return Millis(std::llround(seconds * 1000));
}

std::optional<int64_t> ReadCount(std::string_view text) {
  std::optional<double> v = ParseHeaderNumber(text);
  if (!v || *v < 0 || *v > kMaxCount) {
    return std::nullopt;
  }
  return static_cast<int64_t>(std::floor(*v));
}

// The valid numbers among the comma-separated pieces of `text` (proxies join repeated fields).
std::vector<double> NumbersIn(std::string_view text) {
  std::vector<double> numbers;
  while (!text.empty() && numbers.size() < kMaxHeaderListMembers) {
    size_t comma = text.find(',');
    if (std::optional<double> v = ParseHeaderNumber(text.substr(0, comma))) {
      numbers.push_back(*v);
    }
    text.remove_prefix(comma == std::string_view::npos ? text.size() : comma + 1);
  }
  return numbers;
}

void KeepMinCounts(std::string_view text, std::optional<int64_t>& slot) {
  for (double v : NumbersIn(text)) {
    if (v >= 0 && v <= kMaxCount) {
      KeepMin(slot, static_cast<int64_t>(std::floor(v)));
    }
  }
}

// Applies the magnitude rule documented in the header to one reset value.
void ApplyReset(double v, WallTime received_at, Budget& budget) {
  if (v < kEpochSecondsFloor) {
    KeepMax(budget.reset_after, ClampDelay(v));
    return;
  }
  double epoch_s = v >= kEpochMillisFloor ? v / 1000 : v;
  double received_s = std::chrono::duration<double>(received_at.time_since_epoch()).count();
  double cap_s = std::chrono::duration<double>(kMaxRateLimitWait).count();
  double delta_s = std::min(epoch_s - received_s, cap_s);
  KeepMax(budget.reset_at, received_at + Millis(std::llround(delta_s * 1000)));
}

void ApplyResets(std::string_view text, WallTime received_at, Budget& budget) {
  for (double v : NumbersIn(text)) {
    ApplyReset(v, received_at, budget);
  }
}

std::optional<std::string> ReadLabel(std::string_view text) {
  text = TrimOws(text);
  if (text.empty() || text.size() > kMaxLabelLength) {
    return std::nullopt;
  }
  for (char c : text) {
    if (c <= ' ' || c > '~') {
      return std::nullopt;
    }
  }
  return std::string(text);
}

void OnRetryAfter(std::string_view value, Collected& c) {
  if (std::optional<double> seconds = ParseHeaderNumber(value)) {
    KeepMax(c.retry_after, ClampDelay(*seconds));
    return;
  }
  if (std::optional<WallTime> date = ParseHttpDate(value, c.received_at)) {
    KeepMax(c.retry_after,
            ClampDelay(std::chrono::duration<double>(*date - c.received_at).count()));
    return;
  }
  for (double seconds : NumbersIn(value)) {
    KeepMax(c.retry_after, ClampDelay(seconds));
  }
}

void OnXLimit(std::string_view value, Collected& c) { KeepMinCounts(value, c.x.limit); }
void OnXRemaining(std::string_view value, Collected& c) { KeepMinCounts(value, c.x.remaining); }
void OnXReset(std::string_view value, Collected& c) { ApplyResets(value, c.received_at, c.x); }

void OnXResetAfter(std::string_view value, Collected& c) {
  for (double seconds : NumbersIn(value)) {
    KeepMax(c.x.reset_after, ClampDelay(seconds));
  }
}

void OnXBucket(std::string_view value, Collected& c) {
  if (!c.bucket.has_value()) {
    c.bucket = ReadLabel(value);
  }
}

void OnXResource(std::string_view value, Collected& c) {
  if (!c.resource.has_value()) {
    c.resource = ReadLabel(value);
  }
}

void OnXGlobal(std::string_view value, Collected& c) {
  value = TrimOws(value);
  c.global = c.global || EqualsIgnoreCase(value, "true") || value == "1";
}

void OnXScope(std::string_view value, Collected& c) {
  using Scope = RateLimitHeaders::Scope;
  value = TrimOws(value);
  if (c.scope.has_value()) {
    return;
  }
  if (EqualsIgnoreCase(value, "user")) {
    c.scope = Scope::kUser;
  } else if (EqualsIgnoreCase(value, "global")) {
    c.scope = Scope::kGlobal;
  } else if (EqualsIgnoreCase(value, "shared")) {
    c.scope = Scope::kShared;
  }
}

void OnRateLimit(std::string_view value, Collected& c) {
  for (HeaderListMember& m : ParseHeaderList(value)) {
    if (c.ratelimit.size() < kMaxHeaderListMembers) {
      c.ratelimit.push_back(std::move(m));
    }
  }
}

void OnRateLimitPolicy(std::string_view value, Collected& c) {
  for (HeaderListMember& m : ParseHeaderList(value)) {
    if (c.policies.size() < kMaxHeaderListMembers) {
      c.policies.push_back(std::move(m));
    }
  }
}

void OnLegacyLimit(std::string_view value, Collected& c) { KeepMinCounts(value, c.legacy.limit); }
void OnLegacyRemaining(std::string_view value, Collected& c) {
  KeepMinCounts(value, c.legacy.remaining);
}
void OnLegacyReset(std::string_view value, Collected& c) {
  ApplyResets(value, c.received_at, c.legacy);
}

struct Handler {
  std::string_view name;
  void (*on_value)(std::string_view, Collected&);
};

constexpr Handler kHandlers[] = {
    {"retry-after", OnRetryAfter},
    {"x-ratelimit-limit", OnXLimit},
    {"x-ratelimit-remaining", OnXRemaining},
    {"x-ratelimit-reset", OnXReset},
    {"x-ratelimit-reset-after", OnXResetAfter},
    {"x-ratelimit-bucket", OnXBucket},
    {"x-ratelimit-resource", OnXResource},
    {"x-ratelimit-global", OnXGlobal},
    {"x-ratelimit-scope", OnXScope},
    {"ratelimit", OnRateLimit},
    {"ratelimit-policy", OnRateLimitPolicy},
    {"ratelimit-limit", OnLegacyLimit},
    {"ratelimit-remaining", OnLegacyRemaining},
    {"ratelimit-reset", OnLegacyReset},
};

bool CountsRequests(const HeaderListMember& policy) {
  std::optional<std::string_view> unit = policy.Param("qu");
  return !unit.has_value() || EqualsIgnoreCase(*unit, "\"requests\"") ||
         EqualsIgnoreCase(*unit, "requests");
}

const HeaderListMember* PolicyNamed(const Collected& c, std::string_view name) {
  for (const HeaderListMember& p : c.policies) {
    if (!p.name.empty() && p.name == name) {
      return &p;
    }
  }
  return nullptr;
}

// Draft-07 'limit=100, remaining=50, reset=30' members.
void ApplyDictionaryMember(const HeaderListMember& m, Collected& c) {
  if (EqualsIgnoreCase(m.name, "limit")) {
    KeepMinCounts(m.value, c.ietf.limit);
  } else if (EqualsIgnoreCase(m.name, "remaining")) {
    KeepMinCounts(m.value, c.ietf.remaining);
  } else if (EqualsIgnoreCase(m.name, "reset")) {
    ApplyResets(m.value, c.received_at, c.ietf);
  }
}

// The RateLimit member in force: fewest remaining, then the longest t. Skips members whose
// policy counts something other than requests.
const HeaderListMember* ChooseRateLimit(Collected& c) {
  const HeaderListMember* best = nullptr;
  Millis best_t(-1);
  for (const HeaderListMember& m : c.ratelimit) {
    if (!m.value.empty()) {
      ApplyDictionaryMember(m, c);
      continue;
    }
    std::optional<int64_t> r = ReadCount(m.Param("r").value_or(""));
    const HeaderListMember* policy = PolicyNamed(c, m.name);
    if (!r.has_value() || (policy != nullptr && !CountsRequests(*policy))) {
      continue;
    }
    std::optional<double> t = ParseHeaderNumber(m.Param("t").value_or(""));
    Millis t_ms = t.has_value() ? ClampDelay(*t) : Millis(0);
    std::optional<int64_t> best_r =
        best != nullptr ? ReadCount(best->Param("r").value_or("")) : std::nullopt;
    if (best == nullptr || *r < *best_r || (*r == *best_r && t_ms > best_t)) {
      best = &m;
      best_t = t_ms;
    }
  }
  return best;
}

const HeaderListMember* ChoosePolicy(const Collected& c, const HeaderListMember* in_force) {
  if (in_force != nullptr) {
    if (const HeaderListMember* p = PolicyNamed(c, in_force->name)) {
      return p;
    }
  }
  for (const HeaderListMember& p : c.policies) {
    if (CountsRequests(p) && (p.number.has_value() || p.Param("q").has_value())) {
      return &p;
    }
  }
  return nullptr;
}

void ApplyPolicy(const HeaderListMember& p, RateLimitHeaders& out) {
  if (!p.name.empty() && p.name.size() <= kMaxLabelLength) {
    out.policy_name = std::string(p.name);
  }
  if (p.number.has_value() && *p.number >= 0 && *p.number <= kMaxCount) {
    out.policy_quota = static_cast<int64_t>(*p.number);  // Draft-06 '100;w=60'.
  } else {
    out.policy_quota = ReadCount(p.Param("q").value_or(""));
  }
  std::optional<int64_t> w = ReadCount(p.Param("w").value_or(""));
  if (w.has_value() && *w > 0) {
    out.policy_window = std::chrono::seconds(*w);
  }
}

void ResolveIetf(Collected& c, RateLimitHeaders& out) {
  const HeaderListMember* in_force = ChooseRateLimit(c);
  if (in_force != nullptr) {
    c.ietf.remaining = ReadCount(in_force->Param("r").value_or(""));
    if (std::optional<double> t = ParseHeaderNumber(in_force->Param("t").value_or(""))) {
      c.ietf.reset_after = ClampDelay(*t);
    }
    if (in_force->name.size() <= kMaxLabelLength && !in_force->name.empty()) {
      out.policy_name = std::string(in_force->name);
    }
  }
  if (const HeaderListMember* policy = ChoosePolicy(c, in_force)) {
    ApplyPolicy(*policy, out);
    if (out.policy_quota.has_value() && !c.ietf.limit.has_value()) {
      c.ietf.limit = out.policy_quota;
    }
  }
}

template <class T>
std::optional<T> FirstOf(const std::optional<T>& a, const std::optional<T>& b,
                         const std::optional<T>& c) {
  return a.has_value() ? a : (b.has_value() ? b : c);
}

void Merge(const Collected& c, RateLimitHeaders& out) {
  out.limit = FirstOf(c.x.limit, c.ietf.limit, c.legacy.limit);
  out.remaining = FirstOf(c.x.remaining, c.ietf.remaining, c.legacy.remaining);
  out.reset_at = FirstOf(c.x.reset_at, c.ietf.reset_at, c.legacy.reset_at);
  out.reset_after = FirstOf(c.x.reset_after, c.ietf.reset_after, c.legacy.reset_after);
  out.retry_after = c.retry_after;
  out.bucket = c.bucket.has_value() ? c.bucket : c.resource;
  out.global = c.global;
  out.scope = c.scope;
}

}  // namespace

RateLimitHeaders ParseRateLimitHeaders(std::span<const HttpHeader> headers, int http_status,
                                       WallTime received_at) {
  Collected c;
  c.received_at = received_at;
  for (const HttpHeader& h : headers) {
    for (const Handler& handler : kHandlers) {
      if (EqualsIgnoreCase(h.name, handler.name)) {
        handler.on_value(h.value, c);
        break;
      }
    }
  }
  RateLimitHeaders out;
  out.http_status = http_status;
  out.received_at = received_at;
  ResolveIetf(c, out);
  Merge(c, out);
  return out;
}

std::optional<Millis> RateLimitHeaders::SuggestedWait() const {
  if (retry_after.has_value() && http_status >= 300) {
    return retry_after;
  }
  if (!remaining.has_value() || *remaining > 0) {
    return std::nullopt;
  }
  if (reset_after.has_value()) {
    return reset_after;
  }
  if (reset_at.has_value()) {
    return ClampDelay(std::chrono::duration<double>(*reset_at - received_at).count());
  }
  return std::nullopt;
}

}  // namespace egress::adapters
