#include "storage/index_keys.h"

#include <optional>

#include "storage/coding.h"

namespace egress::storage {
namespace {

uint64_t TimeBits(int64_t ms) { return ms < 0 ? 0 : static_cast<uint64_t>(ms); }

}  // namespace

std::string DueKey(int64_t due_ms, std::string_view id) {
  std::string key;
  key.reserve(8 + id.size());
  PutBigEndian64(key, TimeBits(due_ms));
  key.append(id);
  return key;
}

bool ParseDueKey(std::string_view key, int64_t& due_ms, std::string_view& id) {
  if (key.size() <= 8) {
    return false;
  }
  due_ms = static_cast<int64_t>(DecodeBigEndian64(key.data()));
  id = key.substr(8);
  return true;
}

std::string DestIndexKey(std::string_view destination_key, std::string_view id) {
  std::string key;
  key.reserve(destination_key.size() + 1 + id.size());
  key.append(destination_key).push_back('\0');
  key.append(id);
  return key;
}

std::string_view DestOfIndexKey(std::string_view key) { return key.substr(0, key.find('\0')); }

std::string_view IdOfDestIndexKey(std::string_view key) {
  const size_t nul = key.find('\0');
  return nul == std::string_view::npos ? std::string_view() : key.substr(nul + 1);
}

std::string DestUpperBound(std::string_view destination_key) {
  std::string key(destination_key);
  key.push_back('\x01');
  return key;
}

std::string StateKey(DeliveryState state, std::string_view id) {
  std::string key(1, static_cast<char>(state));
  key.append(id);
  return key;
}

std::string DoneKey(DeliveryState state, int64_t finished_ms, std::string_view id) {
  std::string key = DoneBound(static_cast<char>(state), finished_ms);
  key.append(id);
  return key;
}

std::string IdemExpiryKey(int64_t finished_ms, std::string_view id) {
  std::string key = DoneBound(kIdemExpiryTag, finished_ms);
  key.append(id);
  return key;
}

std::string DoneBound(char tag, int64_t finished_ms) {
  std::string key(1, tag);
  PutBigEndian64(key, TimeBits(finished_ms));
  return key;
}

bool ParseDoneKey(std::string_view key, char& tag, int64_t& finished_ms, std::string_view& id) {
  if (key.size() <= 9) {
    return false;
  }
  tag = key[0];
  return ParseDueKey(key.substr(1), finished_ms, id);
}

std::string IdemKey(std::string_view tenant, std::string_view key) {
  std::string out(tenant);
  out.push_back('\0');
  out.append(key);
  return out;
}

std::string CountKey(DeliveryState state) {
  std::string key = "count/";
  key.append(StateName(state));
  return key;
}

std::string DestCountKey(std::string_view destination_key, DeliveryState state) {
  std::string key;
  SetDestCountKey(key, destination_key, state);
  return key;
}

void SetDestCountKey(std::string& out, std::string_view destination_key, DeliveryState state) {
  out.assign("destcount/");
  out.append(StateName(state));
  out.push_back('/');
  out.append(destination_key);
}

bool SplitDestCountKey(std::string_view key, DeliveryState& state, std::string_view& destination) {
  constexpr std::string_view kPrefix = "destcount/";
  if (!key.starts_with(kPrefix)) {
    return false;
  }
  key.remove_prefix(kPrefix.size());
  const size_t slash = key.find('/');
  if (slash == std::string_view::npos) {
    return false;
  }
  const std::optional<DeliveryState> parsed = ParseState(key.substr(0, slash));
  if (!parsed) {
    return false;
  }
  state = *parsed;
  destination = key.substr(slash + 1);
  return true;
}

bool ParseDestCountKey(std::string_view key, DestCountKeyParts& out) {
  DeliveryState state{};
  std::string_view dest;
  if (!SplitDestCountKey(key, state, dest)) {
    return false;
  }
  const size_t p_end = dest.find('\x1f');
  const size_t t_end = p_end == std::string_view::npos ? p_end : dest.find('\x1f', p_end + 1);
  if (t_end == std::string_view::npos) {
    return false;
  }
  out.state = state;
  out.platform = dest.substr(0, p_end);
  out.tenant = dest.substr(p_end + 1, t_end - p_end - 1);
  return true;
}

std::string BacklogKey(std::string_view tenant) {
  std::string key = "backlog/";
  key.append(tenant);
  return key;
}

std::string StoredBytesKey(std::string_view tenant) {
  std::string key(kStoredBytesPrefix);
  key.append(tenant);
  return key;
}

std::string QuotaId(std::string_view tenant, std::string_view quota) {
  std::string id;
  id.reserve(tenant.size() + 1 + quota.size());
  id.append(tenant);
  id.push_back('\x1f');
  id.append(quota);
  return id;
}

std::string QuotaSliceKey(std::string_view tenant, std::string_view quota, int64_t expires_ms) {
  std::string key(kQuotaSlicePrefix);
  key.append(QuotaId(tenant, quota));
  key.push_back('\x1f');
  PutBigEndian64(key, static_cast<uint64_t>(expires_ms));
  return key;
}

bool ParseQuotaSliceKey(std::string_view key, std::string_view& quota_id, int64_t& expires_ms) {
  if (!key.starts_with(kQuotaSlicePrefix) || key.size() < kQuotaSlicePrefix.size() + 3 + 8) {
    return false;
  }
  key.remove_prefix(kQuotaSlicePrefix.size());
  if (key[key.size() - 9] != '\x1f') {
    return false;
  }
  expires_ms = static_cast<int64_t>(DecodeBigEndian64(key.data() + key.size() - 8));
  quota_id = key.substr(0, key.size() - 9);
  return quota_id.find('\x1f') != std::string_view::npos;
}

}  // namespace egress::storage
