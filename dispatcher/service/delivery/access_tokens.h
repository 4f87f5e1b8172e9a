#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "dispatcher/base/clock.h"
#include "dispatcher/base/status.h"
#include "storage/delivery.h"

namespace egress::service {

// The OAuth2 access tokens of the credentials whose platform needs one (a profile platform with
// [oauth2]: docs/platforms.md, "Profile platforms"), with the sends that wait for one. One fetch
// per credential at a time: the first send without a usable token starts it, the others wait
// here, and all go on when it ends. State only, no I/O: the DeliveryLoop sends the token
// requests. Not thread-safe: the loop's.
class AccessTokens {
 public:
  // A send held until its credential's token is fetched.
  struct Waiting {
    std::string dest_key;
    uint64_t sequence = 0;
    storage::Delivery delivery;
  };

  enum class State : uint8_t {
    kUsable,    // token() is usable now
    kFetching,  // a fetch is under way: wait for it
    kNeeded,    // none usable and none under way: start a fetch (then Started())
    kFailed,    // the last fetch failed within its back-off: error() says why
  };

  // How long a failure stands before the next send fetches again: a refusal of the client
  // (Rejected: a wrong secret) for `refused_backoff`, anything else for `backoff`.
  struct Options {
    Millis backoff{1000};
    Millis refused_backoff{60'000};
    // A token refused (401) within this long of its fetch means the credential is wrong, not
    // the token stale (Refused()).
    Millis fresh{10'000};
  };

  AccessTokens() = default;
  explicit AccessTokens(Options options) : options_(options) {}

  State Look(const std::string& credential, SteadyTime now) const;
  // The usable token (Look() == kUsable), marked used at `now` (Sweep keeps it).
  const std::string& Use(const std::string& credential, SteadyTime now);
  // The last fetch's failure (Look() == kFailed).
  const Status& error(const std::string& credential) const;

  void Started(const std::string& credential);
  void Wait(const std::string& credential, Waiting waiting);
  // A fetch ended with `token`, valid `expires_in` from `now`: it is used until
  // max(expires_in - refresh_before, expires_in / 2) has passed, so it is replaced before it
  // expires and never sent expired. Returns the sends that waited.
  std::vector<Waiting> Fetched(const std::string& credential, std::string token, Millis expires_in,
                               Millis refresh_before, SteadyTime now);
  // A fetch failed: the sends that waited (each fails as the loop decides).
  std::vector<Waiting> Failed(const std::string& credential, Status error, SteadyTime now);
  // The platform refused `token` (401): dropped, so the next send fetches another. True when it
  // was fetched less than Options::fresh ago (the credential itself is wrong).
  bool Refused(const std::string& credential, const std::string& token, SteadyTime now);

  // Forgets the tokens of credentials not used for `idle` and not being fetched.
  void Sweep(SteadyTime now, Millis idle);
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::string token;
    SteadyTime fetched_at{};
    SteadyTime use_until{};
    SteadyTime last_used{};
    bool fetching = false;
    Status error;
    SteadyTime failed_until{};
    std::vector<Waiting> waiting;
  };

  Options options_;
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace egress::service
