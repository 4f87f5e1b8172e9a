#include "dispatcher/service/delivery/destination_index.h"

#include <cstring>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include "dispatcher/base/check.h"

namespace egress::service {
namespace {

// Keys compare last; a null key (a probe's) sorts after every key.
bool KeyLess(const std::string* a, const std::string* b) {
  if (a == b || a == nullptr) {
    return false;
  }
  return b == nullptr || *a < *b;
}

}  // namespace

bool DestinationIndex::ByKey::operator()(const Entry& a, const Entry& b) const {
  if (const int c = a.tenant->compare(*b.tenant); c != 0) {
    return c < 0;
  }
  if (a.hash != b.hash) {
    return a.hash < b.hash;
  }
  return KeyLess(a.key, b.key);
}

bool DestinationIndex::ByDeferral::operator()(const Entry& a, const Entry& b) const {
  if (a.deferral_ms != b.deferral_ms) {
    return a.deferral_ms < b.deferral_ms;
  }
  return ByKey{}(a, b);
}

bool DestinationIndex::ByTenantDeferral::operator()(const Entry& a, const Entry& b) const {
  if (const int c = a.tenant->compare(*b.tenant); c != 0) {
    return c < 0;
  }
  return ByDeferral{}(a, b);
}

void DestinationIndex::MacFree::operator()(EVP_MAC_CTX* ctx) const { EVP_MAC_CTX_free(ctx); }

DestinationIndex::DestinationIndex() {
  // The hash key and the epoch: from OpenSSL's generator; should it fail (it does not on Linux),
  // from the address of this object, which still orders (only the key's secrecy is lost).
  if (RAND_bytes(hash_key_.data(), static_cast<int>(hash_key_.size())) != 1 ||
      RAND_bytes(reinterpret_cast<unsigned char*>(&epoch_), sizeof epoch_) != 1) {
    const auto self = reinterpret_cast<uintptr_t>(this);
    std::memcpy(hash_key_.data(), &self, sizeof self);
    epoch_ = self;
  }
  if (EVP_MAC* mac = EVP_MAC_fetch(nullptr, "SIPHASH", nullptr)) {
    siphash_.reset(EVP_MAC_CTX_new(mac));
    EVP_MAC_free(mac);
    size_t size = sizeof(uint64_t);
    const OSSL_PARAM params[] = {OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &size),
                                 OSSL_PARAM_construct_end()};
    if (siphash_ && EVP_MAC_init(siphash_.get(), hash_key_.data(), 16, params) != 1) {
      siphash_.reset();
    }
  }
}

uint64_t DestinationIndex::Hash(std::string_view key) const {
  unsigned char mac[32] = {};
  const auto* data = reinterpret_cast<const unsigned char*>(key.data());
  size_t len = 0;
  if (!siphash_ || EVP_MAC_init(siphash_.get(), nullptr, 0, nullptr) != 1 ||
      EVP_MAC_update(siphash_.get(), data, key.size()) != 1 ||
      EVP_MAC_final(siphash_.get(), mac, &len, sizeof mac) != 1) {
    unsigned int hmac_len = 0;
    HMAC(EVP_sha256(), hash_key_.data(), static_cast<int>(hash_key_.size()), data, key.size(), mac,
         &hmac_len);
  }
  uint64_t h = 0;
  std::memcpy(&h, mac, sizeof h);
  return h;
}

uint64_t DestinationIndex::Add(const std::string* key, const std::string* tenant) {
  const uint64_t hash = Hash(*key);
  const bool added = by_key_.insert(Entry{.tenant = tenant, .hash = hash, .key = key}).second;
  EGRESS_CHECK(added);
  ++per_tenant_[*tenant];
  return hash;
}

void DestinationIndex::Remove(const std::string* key, const std::string* tenant, uint64_t hash) {
  by_key_.erase(Entry{.tenant = tenant, .hash = hash, .key = key});
  auto it = per_tenant_.find(*tenant);
  if (it != per_tenant_.end() && --it->second == 0) {
    per_tenant_.erase(it);
  }
}

void DestinationIndex::MoveDeferral(const std::string* key, const std::string* tenant,
                                    uint64_t hash, int64_t before, int64_t after) {
  if (before == after) {
    return;
  }
  if (before != 0) {
    const Entry entry{.deferral_ms = before, .tenant = tenant, .hash = hash, .key = key};
    by_deferral_.erase(entry);
    by_tenant_deferral_.erase(entry);
  }
  if (after != 0) {
    const Entry entry{.deferral_ms = after, .tenant = tenant, .hash = hash, .key = key};
    by_deferral_.insert(entry);
    by_tenant_deferral_.insert(entry);
  }
}

size_t DestinationIndex::CountOf(const std::string& tenant) const {
  auto it = per_tenant_.find(tenant);
  return it == per_tenant_.end() ? 0 : it->second;
}

}  // namespace egress::service
