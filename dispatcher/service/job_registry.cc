#include "dispatcher/service/job_registry.h"

#include <array>
#include <utility>

#include <fmt/format.h>
#include <openssl/rand.h>

#include "dispatcher/base/hex.h"

namespace egress::service {
namespace {

constexpr size_t kIdBytes = 8;  // 16 hex characters

// A fresh id from the OS's CSPRNG (through OpenSSL), or Unavailable when it has none.
Result<std::string> DrawId() {
  std::array<unsigned char, kIdBytes> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    return Status::Unavailable("jobs: no random bytes for a job id");
  }
  return HexEncode({reinterpret_cast<const char*>(bytes.data()), bytes.size()});
}

}  // namespace

const char* JobStateName(Job::State state) {
  switch (state) {
    case Job::State::kRunning:
      return "running";
    case Job::State::kDone:
      return "done";
    case Job::State::kFailed:
      return "failed";
  }
  return "unknown";
}

nlohmann::json JobToJson(const Job& job) {
  nlohmann::json j = {
      {"job", job.id},          {"kind", job.kind},         {"state", JobStateName(job.state)},
      {"matched", job.matched}, {"replayed", job.replayed}, {"started_ms", job.started_ms},
      {"filter", job.params}};
  j["finished_ms"] =
      job.state == Job::State::kRunning ? nlohmann::json(nullptr) : nlohmann::json(job.finished_ms);
  if (job.state == Job::State::kFailed) {
    j["error"] = job.error;
  }
  return j;
}

bool IsJobId(std::string_view text) {
  if (text.size() != 2 * kIdBytes) {
    return false;
  }
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return false;
    }
  }
  return true;
}

Result<std::string> JobRegistry::Start(std::string kind, nlohmann::json params, int64_t now_ms,
                                       std::string tenant) {
  if (running_ >= limits_.max_running) {
    return Status::Busy(fmt::format("{} jobs are running; wait for one to finish", running_));
  }
  if (!tenant.empty()) {
    auto held = running_by_tenant_.find(tenant);
    if (held != running_by_tenant_.end() && held->second >= limits_.max_running_per_tenant) {
      return Status::Busy(
          fmt::format("this tenant runs {} job(s), its most at once; wait for it", held->second));
    }
  }
  std::string id;
  do {
    auto drawn = DrawId();
    if (!drawn) {
      return drawn.error();
    }
    id = std::move(*drawn);
  } while (jobs_.contains(id));
  Job job{.id = id,
          .kind = std::move(kind),
          .started_ms = now_ms,
          .params = std::move(params),
          .tenant = std::move(tenant)};
  if (!job.tenant.empty()) {
    ++running_by_tenant_[job.tenant];
  }
  jobs_.emplace(id, std::move(job));
  ++running_;
  return id;
}

const Job* JobRegistry::Find(std::string_view id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

void JobRegistry::Progress(const std::string& id, uint64_t matched, uint64_t replayed) {
  auto it = jobs_.find(id);
  if (it == jobs_.end() || it->second.state != Job::State::kRunning) {
    return;
  }
  it->second.matched += matched;
  it->second.replayed += replayed;
}

void JobRegistry::Finish(const std::string& id, const Status& status, int64_t now_ms) {
  auto it = jobs_.find(id);
  if (it == jobs_.end() || it->second.state != Job::State::kRunning) {
    return;
  }
  Job& job = it->second;
  job.state = status.ok() ? Job::State::kDone : Job::State::kFailed;
  job.error = status.ok() ? "" : status.message();
  job.finished_ms = now_ms;
  --running_;
  if (auto held = running_by_tenant_.find(job.tenant); held != running_by_tenant_.end()) {
    if (--held->second == 0) {
      running_by_tenant_.erase(held);
    }
  }
  finished_.push_back(id);
  while (finished_.size() > limits_.max_finished) {
    jobs_.erase(finished_.front());
    finished_.pop_front();
  }
}

}  // namespace egress::service
