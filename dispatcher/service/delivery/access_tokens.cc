#include "dispatcher/service/delivery/access_tokens.h"

#include <algorithm>
#include <utility>

namespace egress::service {

AccessTokens::State AccessTokens::Look(const std::string& credential, SteadyTime now) const {
  auto it = entries_.find(credential);
  if (it == entries_.end()) {
    return State::kNeeded;
  }
  const Entry& e = it->second;
  if (!e.token.empty() && now < e.use_until) {
    return State::kUsable;
  }
  if (e.fetching) {
    return State::kFetching;
  }
  if (!e.error.ok() && now < e.failed_until) {
    return State::kFailed;
  }
  return State::kNeeded;
}

const std::string& AccessTokens::Use(const std::string& credential, SteadyTime now) {
  Entry& e = entries_.at(credential);
  e.last_used = now;
  return e.token;
}

const Status& AccessTokens::error(const std::string& credential) const {
  return entries_.at(credential).error;
}

void AccessTokens::Started(const std::string& credential) { entries_[credential].fetching = true; }

void AccessTokens::Wait(const std::string& credential, Waiting waiting) {
  entries_[credential].waiting.push_back(std::move(waiting));
}

std::vector<AccessTokens::Waiting> AccessTokens::Fetched(const std::string& credential,
                                                         std::string token, Millis expires_in,
                                                         Millis refresh_before, SteadyTime now) {
  Entry& e = entries_[credential];
  e.fetching = false;
  e.error = Status::Ok();
  e.token = std::move(token);
  e.fetched_at = now;
  e.last_used = now;
  const Millis use_for = std::max(expires_in - refresh_before, expires_in / 2);
  e.use_until = now + std::max(Millis(0), use_for);
  return std::exchange(e.waiting, {});
}

std::vector<AccessTokens::Waiting> AccessTokens::Failed(const std::string& credential, Status error,
                                                        SteadyTime now) {
  Entry& e = entries_[credential];
  e.fetching = false;
  const bool refused = error.code() == Status::Code::kRejected;
  e.error = std::move(error);
  e.failed_until = now + (refused ? options_.refused_backoff : options_.backoff);
  return std::exchange(e.waiting, {});
}

bool AccessTokens::Refused(const std::string& credential, const std::string& token,
                           SteadyTime now) {
  auto it = entries_.find(credential);
  if (it == entries_.end() || it->second.token != token) {
    return false;  // replaced already; the new one was not refused
  }
  Entry& e = it->second;
  const bool fresh = now - e.fetched_at < options_.fresh;
  e.token.clear();
  e.use_until = SteadyTime{};
  return fresh;
}

void AccessTokens::Sweep(SteadyTime now, Millis idle) {
  std::erase_if(entries_, [&](const auto& entry) {
    const Entry& e = entry.second;
    return !e.fetching && e.waiting.empty() && now - e.last_used >= idle && now >= e.failed_until;
  });
}

}  // namespace egress::service
