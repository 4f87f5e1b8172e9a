// Background jobs: the bulk replay's slices (POST /v1/deliveries/replay) and GET /v1/jobs/{id}.
// The registry (dispatcher/service/job_registry.h) lives on the loop; each slice runs on the
// storage pool and posts its counts back.

#include <string>
#include <utility>
#include <vector>

#include "dispatcher/service/api/handlers.h"
#include "dispatcher/service/api/http.h"
#include "dispatcher/service/service.h"
#include "storage/operator_actions.h"

namespace egress::service {
namespace {

using storage::Delivery;

// Deliveries one slice looks at: small enough that a drain waits for one slice at most.
constexpr size_t kReplaySlice = 1000;

struct SliceResult {
  Result<storage::ReplayCount> count;
  std::vector<Delivery> queued;  // to notify the loop
};

int64_t NowMs(const Service& s) { return ToUnixMillis(s.clock().WallNow()); }

// Runs the job's next slice from `filter.after_id`, then the one after it, until the end.
void RunSlice(Service& s, std::string job_id, storage::ListFilter filter) {
  const int64_t now_ms = NowMs(s);
  OnStore(
      s,
      [filter, now_ms](storage::QueueStore& store) {
        SliceResult r;
        r.count = storage::ReplayMatching(
            store, filter, false, now_ms, [&r](Delivery&& d) { r.queued.push_back(std::move(d)); },
            kReplaySlice);
        return r;
      },
      [&s, job_id = std::move(job_id), filter = std::move(filter)](SliceResult r) mutable {
        // Replays are durable: a draining service leaves them to the next start's recovery.
        if (s.accepting()) {
          for (const Delivery& d : r.queued) {
            s.loop().Notify(d);
          }
        }
        if (!r.count) {
          s.jobs().Finish(job_id, r.count.error(), NowMs(s));
          return;
        }
        s.jobs().Progress(job_id, r.count->matched, r.count->replayed);
        if (r.count->done) {
          s.jobs().Finish(job_id, Status::Ok(), NowMs(s));
          return;
        }
        if (!s.accepting()) {
          s.jobs().Finish(job_id,
                          Status::Cancelled("stopped: the service is shutting down; replay the "
                                            "same filter again to continue"),
                          NowMs(s));
          return;
        }
        filter.after_id = std::move(r.count->cursor);
        RunSlice(s, std::move(job_id), std::move(filter));
      });
}

}  // namespace

void StartReplayJob(Service& s, storage::ListFilter filter, nlohmann::json echo,
                    const TenantScope& scope, Respond respond) {
  auto id = s.jobs().Start("replay", std::move(echo), NowMs(s), scope.value_or(""));
  if (!id) {
    if (id.error().code() == Status::Code::kBusy) {
      HttpResponse res = ErrorResponse({429, "too_many_jobs", id.error().message()});
      res.set("Retry-After", "1");
      return respond(std::move(res));
    }
    return respond(ErrorResponse({503, "unavailable", id.error().message()}));
  }
  filter.after_id.clear();
  HttpResponse res = JsonResponse(202, JobToJson(*s.jobs().Find(*id)));
  res.set("Location", "/v1/jobs/" + *id);
  RunSlice(s, *id, std::move(filter));
  respond(std::move(res));
}

void GetJob(Service& s, const std::string& id, const TenantScope& scope, Respond respond) {
  const Job* job = IsJobId(id) ? s.jobs().Find(id) : nullptr;
  // A job another scope started is absent for a tenant's key; the admin sees every job.
  if (job == nullptr || (scope && job->tenant != *scope)) {
    // The id is not echoed: it is whatever the client sent.
    return respond(ErrorResponse({404, "not_found", "no such job"}));
  }
  respond(JsonResponse(200, JobToJson(*job)));
}

}  // namespace egress::service
