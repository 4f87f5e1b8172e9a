// Backend over the service's HTTP API.

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "dispatcher/cli/backend.h"

namespace egress::cli {
namespace {

using nlohmann::json;

constexpr std::chrono::milliseconds kJobPoll{200};

// A count field of a job or replay answer; 0 when absent or not a count.
uint64_t Count(const json& j, const char* name) {
  auto it = j.find(name);
  return it != j.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

// Percent-encodes a query value.
std::string Escape(const std::string& v) {
  std::string out;
  for (unsigned char c : v) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

void AddParam(std::string& target, const char* name, const std::string& value) {
  if (value.empty()) {
    return;
  }
  target += target.find('?') == std::string::npos ? '?' : '&';
  target += std::string(name) + "=" + Escape(value);
}

// An API error body {"error", "message"} as a Status of the matching code.
Status FromReply(const HttpReply& r) {
  json body = json::parse(r.body, nullptr, false);
  std::string message = body.is_object() && body.contains("message") && body["message"].is_string()
                            ? body["message"].get<std::string>()
                            : fmt::format("HTTP {}", r.status);
  switch (r.status) {
    case 400:
      return Status::InvalidArgument(message);
    case 401:
      return Status::InvalidArgument(message + " (give --token or RELAY_EGRESS_TOKEN: an API " +
                                     "key or the admin token)");
    case 403:
      return Status::InvalidArgument(message + " (this token may not do that: another tenant's " +
                                     "work or an admin route)");
    case 429:
      return Status::Unavailable("service: " + message);
    case 404:
      return Status::NotFound(message);
    case 409:
      return Status::FailedPrecondition(message);
    case 503:
      return Status::Unavailable("service: " + message);
    default:
      return Status::IoError(fmt::format("service answered {}: {}", r.status, message));
  }
}

class ServiceBackend final : public Backend {
 public:
  ServiceBackend(ServerUrl server, std::string token, std::string cacert)
      : server_(std::move(server)), token_(std::move(token)), cacert_(std::move(cacert)) {}

  Result<json> List(const DeliveryFilter& f) override {
    std::string target = "/v1/deliveries";
    AddParam(target, "state", f.state);
    AddParam(target, "tenant", f.tenant);
    AddParam(target, "platform", f.platform);
    AddParam(target, "destination", f.destination);
    AddParam(target, "reason", f.reason);
    AddParam(target, "since", f.since_ms ? std::to_string(*f.since_ms) : "");
    AddParam(target, "until", f.until_ms ? std::to_string(*f.until_ms) : "");
    AddParam(target, "cursor", f.cursor);
    AddParam(target, "limit", f.limit > 0 ? std::to_string(f.limit) : "");
    return Call("GET", target, "");
  }
  Result<json> Get(const std::string& id) override {
    return Call("GET", "/v1/deliveries/" + Escape(id), "");
  }
  Result<json> Replay(const std::string& id) override {
    return Call("POST", "/v1/deliveries/" + Escape(id) + "/replay", "");
  }
  Result<json> ReplayMatching(const DeliveryFilter& f, bool dry_run,
                              const ReplayProgress& progress) override {
    json body = {{"state", f.state}, {"dry_run", dry_run}};
    for (auto [name, value] :
         {std::pair{"tenant", &f.tenant}, std::pair{"platform", &f.platform},
          std::pair{"destination", &f.destination}, std::pair{"reason", &f.reason}}) {
      if (!value->empty()) {
        body[name] = *value;
      }
    }
    auto answer = Call("POST", "/v1/deliveries/replay", body.dump());
    if (!answer || dry_run || !answer->contains("job")) {
      return answer;  // a dry run's count, or an error
    }
    if (!(*answer)["job"].is_string()) {
      return Status::IoError(Describe() + "/v1/deliveries/replay: the job id is not a string");
    }
    return FollowJob((*answer)["job"].get<std::string>(), progress);
  }
  Result<json> Cancel(const std::string& id) override {
    return Call("DELETE", "/v1/deliveries/" + Escape(id), "");
  }
  Result<json> Stats() override { return Call("GET", "/v1/stats", ""); }
  Result<json> Destinations(const DestinationsQuery& q) override {
    std::string target = "/v1/destinations";
    AddParam(target, "platform", q.platform);
    AddParam(target, "tenant", q.tenant);
    AddParam(target, "sort", q.sort);
    AddParam(target, "cursor", q.cursor);
    AddParam(target, "limit", q.limit > 0 ? std::to_string(q.limit) : "");
    return Call("GET", target, "");
  }
  Result<json> Enable(const std::string& key) override {
    return Call("POST", "/v1/destinations/enable", json{{"key", key}}.dump());
  }
  Result<std::string> Metrics() override {
    auto reply = HttpCall(server_, "GET", "/metrics", "", token_, cacert_);
    if (!reply) {
      return reply.error();
    }
    if (reply->status != 200) {
      return FromReply(*reply);
    }
    return std::move(reply->body);
  }
  Result<json> Quotas(const std::string& tenant) override {
    return Call(
        "GET",
        tenant.empty() ? "/api/admin/quotas" : "/api/admin/tenants/" + Escape(tenant) + "/quotas",
        "");
  }
  Result<json> Pauses() override { return Call("GET", "/api/admin/pauses", ""); }
  Result<json> Pause(const json& scope) override {
    return Call("POST", "/api/admin/pauses", scope.dump());
  }
  Result<json> Resume(const std::string& id) override {
    return Call("DELETE", "/api/admin/pauses/" + Escape(id), "");
  }
  std::string Describe() const override { return server_.ToString(); }

 private:
  // Polls GET /v1/jobs/{id} until the job is no longer running; its final counts as a replay
  // answer.
  Result<json> FollowJob(const std::string& id, const ReplayProgress& progress) {
    json job;
    for (;;) {
      auto got = Call("GET", "/v1/jobs/" + Escape(id), "");
      if (!got) {
        if (got.error().code() == Status::Code::kNotFound) {
          return Status::IoError(
              fmt::format("replay job {} is gone (the service restarted?); what it replayed stays "
                          "replayed: run the same replay again to continue",
                          id));
        }
        return got.error();
      }
      job = std::move(*got);
      if (progress) {
        progress(Count(job, "matched"), Count(job, "replayed"));
      }
      if (job.value("state", "") != "running") {
        break;
      }
      std::this_thread::sleep_for(kJobPoll);
    }
    const std::string state = job.value("state", "");
    if (state != "done") {
      std::string error = job.contains("error") && job["error"].is_string()
                              ? job["error"].get<std::string>()
                              : "state " + state;
      return Status::IoError(fmt::format("replay job {} failed after replaying {} of {}: {}", id,
                                         Count(job, "replayed"), Count(job, "matched"), error));
    }
    return json{{"matched", Count(job, "matched")},
                {"replayed", Count(job, "replayed")},
                {"dry_run", false},
                {"job", id}};
  }

  Result<json> Call(const std::string& method, const std::string& target, const std::string& body) {
    auto reply = HttpCall(server_, method, target, body, token_, cacert_);
    if (!reply) {
      return reply.error();
    }
    if (reply->status < 200 || reply->status >= 300) {
      return FromReply(*reply);
    }
    json parsed = json::parse(reply->body, nullptr, false);
    if (parsed.is_discarded() || !parsed.is_object()) {
      return Status::IoError(Describe() + target + ": the answer is not a JSON object");
    }
    return parsed;
  }

  ServerUrl server_;
  std::string token_;
  std::string cacert_;
};

}  // namespace

std::unique_ptr<Backend> NewServiceBackend(const ServerUrl& server, const std::string& token,
                                           const std::string& cacert) {
  return std::make_unique<ServiceBackend>(server, token, cacert);
}

}  // namespace egress::cli
