#include "dispatcher/service/delivery/delivery_loop.h"

#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include "adapters/url_parts.h"
#include "dispatcher/base/redact.h"
#include "dispatcher/service/delivery/delivery_mapping.h"
#include "dispatcher/service/event_log.h"
#include "storage/delivery_id.h"

namespace egress::service {
namespace {

// The code_class label of relay_egress_platform_responses_total: 429 apart from the other 4xx,
// "error" when no HTTP answer came (transport failure, timeout).
std::string_view CodeClass(int status) {
  if (status == 429) {
    return "429";
  }
  switch (status / 100) {
    case 1:
      return "1xx";
    case 2:
      return "2xx";
    case 3:
      return "3xx";
    case 4:
      return "4xx";
    case 5:
      return "5xx";
    default:
      return "error";
  }
}

namespace asio = boost::asio;

// A scope at this share of its budget or more (over its last minute) counts the units taken from
// it as near its limit (relay_egress_budget_near_limit_total; Envoy's ratelimit near_limit).
constexpr double kNearLimitRatio = 0.8;
using pacing::Decision;
using pacing::Verdict;
using pacing::VerdictKind;
using storage::Delivery;
using storage::DeliveryState;

constexpr size_t kDestinationPage = 1000;

// A store call that failed this way may succeed when tried again.
bool Passing(const Status& s) {
  switch (s.code()) {
    case Status::Code::kUnavailable:
    case Status::Code::kIoError:
    case Status::Code::kBusy:
    case Status::Code::kTimedOut:
      return true;
    default:
      return false;
  }
}

StoreWriter::Options OutcomeWriterOptions(const DeliveryLoop::Options& o) {
  return {.retry = true,
          .first_retry = o.first_store_retry,
          .max_retry = o.max_store_retry,
          .linger = o.outcome_linger,
          .linger_batch = o.outcome_linger_batch};
}

}  // namespace

DeliveryLoop::DeliveryLoop(asio::io_context& io, asio::any_io_executor storage,
                           storage::QueueStore& store, pacing::Scheduler& scheduler,
                           adapters::HttpTransport& transport, AdapterLookup adapters,
                           const CredentialBook& credentials, const Clock& clock, Metrics& metrics,
                           Options options)
    : io_(io),
      storage_(std::move(storage)),
      store_(store),
      scheduler_(scheduler),
      transport_(transport),
      adapters_(std::move(adapters)),
      credentials_(credentials),
      clock_(clock),
      metrics_(metrics),
      options_(std::move(options)),
      leases_(io, storage_, store, clock),
      outcomes_(io, storage_, store, clock, OutcomeWriterOptions(options_)),
      discord_invalid_(options_.discord_invalid_requests),
      timer_(io),
      maintenance_(io),
      held_timer_(io),
      alive_(std::make_shared<bool>(true)),
      ownership_(store.ownership()) {
  scheduler_.SetWaitObserver(
      [this](pacing::DestinationId id, const pacing::Deferral& wait) { OnPacingWait(id, wait); });
  scheduler_.SetShadowObserver([this](pacing::DestinationId id, pacing::BudgetName budget,
                                      bool throttled) { OnShadowCheck(id, budget, throttled); });
  outcomes_.SetRetryObserver([this](const Status& error, size_t changes) {
    metrics_.Inc(CounterId::kStoreErrors, {{"operation", "outcome"}});
    LogEvent(LogLevel::kWarn, "store_write_retry",
             {{"operation", "outcome"}, {"changes", changes}, {"error", error.ToString()}});
  });
}

DeliveryLoop::~DeliveryLoop() {
  scheduler_.SetWaitObserver(nullptr);
  scheduler_.SetShadowObserver(nullptr);
  *alive_ = false;
}

bool DeliveryLoop::OfferedIs(const Dest& dest, std::string_view id) const {
  if (dest.offered_form == pacing::IdForm::kLong) {
    return OfferedText(dest) == id;
  }
  pacing::PackedId packed;
  return pacing::PackedId::Pack(id, packed) == dest.offered_form &&
         packed.bytes == dest.offered.bytes;
}

std::string DeliveryLoop::OfferedText(const Dest& dest) const {
  if (dest.offered_form == pacing::IdForm::kLong) {
    auto it = long_offered_.find(dest.id.value);
    return it == long_offered_.end() ? std::string() : it->second;
  }
  return dest.offered.Unpack(dest.offered_form);
}

void DeliveryLoop::SetOffered(Dest& dest, const std::string& id) {
  ClearOffered(dest);
  dest.offered_form = pacing::PackedId::Pack(id, dest.offered);
  if (dest.offered_form == pacing::IdForm::kLong) {
    long_offered_[dest.id.value] = id;
  }
}

void DeliveryLoop::ClearOffered(Dest& dest) {
  if (dest.offered_form == pacing::IdForm::kLong) {
    long_offered_.erase(dest.id.value);
  }
  dest.offered_form = pacing::IdForm::kNone;
}

DeliveryLoop::Dest* DeliveryLoop::ById(pacing::DestinationId id) const {
  return id.value < by_id_.size() ? by_id_[id.value] : nullptr;
}

void DeliveryLoop::OnShadowCheck(pacing::DestinationId id, pacing::BudgetName budget,
                                 bool throttled) {
  Dest* found = ById(id);
  if (found == nullptr) {
    return;
  }
  Dest& dest = *found;
  ++dest.shadow_checked;
  const std::string_view name = pacing::BudgetNameString(budget);
  metrics_.Inc(CounterId::kShadowChecked, {{"tenant", *dest.tenant}, {"budget", name}});
  if (throttled) {
    ++dest.shadow_throttled;
    metrics_.Inc(CounterId::kShadowThrottled, {{"tenant", *dest.tenant}, {"budget", name}});
  }
}

void DeliveryLoop::OnPacingWait(pacing::DestinationId id, const pacing::Deferral& wait) {
  Dest* found = ById(id);
  if (found == nullptr) {
    return;
  }
  Dest& dest = *found;
  const PendingDelivery* head = dest.queue.head();
  if (head == nullptr || !OfferedIs(dest, head->id)) {
    return;
  }
  const std::string reason = wait.ToString();
  const size_t counted =
      std::hash<std::string_view>{}(head->id) * 31 + std::hash<std::string>{}(reason);
  if (counted != dest.counted_wait) {
    dest.counted_wait = counted;
    metrics_.Inc(CounterId::kDeferrals,
                 {{"tenant", *dest.tenant}, {"platform", *dest.platform}, {"reason", reason}});
  }
  if (dest.writing_wait) {
    return;
  }
  std::optional<storage::StateChange> change =
      wait.reason == pacing::DeferReason::kPaused
          ? PausedChangeFor(*head, reason, LoopTimeOf(clock_))
          : PacingWaitChangeFor(*head, wait.until, reason, LoopTimeOf(clock_),
                                options_.persist_wait);
  if (!change) {
    return;
  }
  dest.writing_wait = true;
  change->as_owner = true;
  outcomes_.Submit(head->id, std::move(*change), [this, key = *dest.key](Result<Delivery> stored) {
    auto it = dests_.find(key);
    if (it == dests_.end()) {
      return;
    }
    it->second.writing_wait = false;
    if (!Owned(it->second)) {
      Disown(it);
    } else {
      if (stored && storage::IsWaiting(stored->state) && it->second.queue.Add(PendingOf(*stored))) {
        OfferHead(it->second);
      }
      Reindex(it->second);
    }
    CheckDrained();
  });
}

void DeliveryLoop::Start() {
  LoadDestinations();
  ScheduleMaintenance();
}

void DeliveryLoop::LoadDestinations() {
  if (loading_) {
    load_again_ = true;
    return;
  }
  loading_ = true;
  // Page through the destinations with work on the storage pool, registering each on the loop.
  // The function holds itself only weakly (a shared_ptr to itself would never be freed); the
  // jobs on their way keep it. Pool jobs touch `this` only on the loop, behind `alive`.
  auto page = std::make_shared<std::function<void(std::string)>>();
  auto walked = [this] {
    loading_ = false;
    if (load_again_ && !draining_) {
      load_again_ = false;
      LoadDestinations();
    }
  };
  *page = [this, alive = alive_, self = std::weak_ptr(page), walked](std::string after) {
    asio::post(storage_, [this, &store = store_, &io = io_, alive, page = self.lock(), after,
                          walked] {
      auto keys = store.ListDestinations(after, kDestinationPage);
      asio::post(io, [this, alive, page, after, walked, keys = std::move(keys)] {
        if (!*alive || draining_) {
          return;
        }
        if (!keys) {
          // A store fault: counted and logged as any store call, and the page read again after
          // the store's back-off, so that no destination's backlog is left unregistered.
          OnStoreTrouble("scan", keys.error());
          auto retry = std::make_shared<asio::steady_timer>(io_, store_backoff_);
          retry->async_wait([this, alive, page, after, retry](const boost::system::error_code& ec) {
            if (!ec && *alive && !draining_) {
              (*page)(after);
            }
          });
          return;
        }
        for (const std::string& key : *keys) {
          if (Dest* dest = Ensure(key)) {
            // One already held may have missed work told of while this node could not hear it
            // (a lost wake-up, a lapsed lease): read it again after its cursor.
            dest->queue.Invalidate();
            Fetch(*dest);
          }
        }
        if (keys->size() == kDestinationPage) {
          (*page)(keys->back());
        } else {
          walked();
        }
      });
    });
  };
  (*page)("");
}

void DeliveryLoop::OwnershipChanged() {
  if (ownership_ == nullptr || draining_) {
    return;
  }
  for (auto it = dests_.begin(); it != dests_.end();) {
    auto next = std::next(it);
    if (!Owned(it->second)) {
      Disown(it);
    }
    it = next;
  }
  LoadDestinations();
}

void DeliveryLoop::Disown(std::unordered_map<std::string, Dest>::iterator it) {
  Dest& dest = it->second;
  if (dest.offered_form != pacing::IdForm::kNone) {
    scheduler_.Withdraw(dest.id).IgnoreError();
    ClearOffered(dest);
  }
  dest.queue.Reset();
  Reindex(dest);
  Forget(it);  // refused while something of it is in flight: OnPersisted tries again
}

bool DeliveryLoop::Forget(std::unordered_map<std::string, Dest>::iterator it) {
  Dest& dest = it->second;
  if (dest.in_flight != 0 || dest.writing_wait || dest.queue.fetching() ||
      dest.offered_form != pacing::IdForm::kNone || dest.queue.size() != 0 ||
      !scheduler_.RemoveDestination(dest.id).ok()) {
    return false;
  }
  failed_fetches_.erase(*dest.key);
  by_id_[dest.id.value] = nullptr;
  if (!dest.pause_id.empty()) {
    CountPaused(dest, -1);
  }
  index_.MoveDeferral(dest.key, dest.tenant, dest.hash, dest.indexed_deferral_ms, 0);
  index_.Remove(dest.key, dest.tenant, dest.hash);
  dests_.erase(it);
  UpdateHoldCap();
  metrics_.Set(GaugeId::kDestinations, {}, static_cast<double>(dests_.size()));
  return true;
}

bool DeliveryLoop::Owned(const Dest& dest) const {
  return ownership_ == nullptr || ownership_->MayDispatch(dest.shard);
}

void DeliveryLoop::Wake(std::vector<std::string> ids) {
  if (draining_) {
    return;
  }
  asio::post(storage_, [this, &store = store_, &io = io_, alive = alive_, ids = std::move(ids)] {
    // One read for the lot (a lost one is found by the next destination walk).
    std::vector<Delivery> found;
    if (auto many = store.GetMany(ids)) {
      for (Delivery& d : *many) {
        if (storage::IsWaiting(d.state)) {
          found.push_back(std::move(d));
        }
      }
    }
    asio::post(io, [this, alive, found = std::move(found)] {
      if (!*alive || draining_) {
        return;
      }
      for (const Delivery& d : found) {
        Notify(d);
      }
    });
  });
}

void DeliveryLoop::ScheduleMaintenance() {
  maintenance_.expires_after(std::chrono::seconds(60));
  maintenance_.async_wait([this, alive = alive_](const boost::system::error_code& ec) {
    if (ec || !*alive || draining_) {
      return;
    }
    EvictIdle();
    budget_use_.Prune(clock_.Now());
    scheduler_.Sweep();
    discord_invalid_.Sweep(clock_.Now());
    ScheduleMaintenance();
  });
}

const std::string* DeliveryLoop::Intern(std::string name) {
  return &*names_.insert(std::move(name)).first;
}

DeliveryLoop::Dest* DeliveryLoop::Ensure(const std::string& key) {
  if (auto it = dests_.find(key); it != dests_.end()) {
    return &it->second;
  }
  storage::DestinationParts parts;
  std::optional<Platform> platform;
  if (!storage::SplitDestinationKey(key, parts) || !(platform = ParsePlatform(parts.platform))) {
    return nullptr;  // intake validates platforms; an old record of a removed one waits
  }
  const int shard = ownership_ == nullptr ? -1 : ownership_->ShardOf(key);
  if (ownership_ != nullptr && !ownership_->MayDispatch(shard)) {
    return nullptr;  // another node's (its owner loads it)
  }
  // Customer webhooks and Slack incoming webhooks are URLs; the rest go to the platform's API.
  const std::string& url = adapters::IsHttpUrl(parts.destination)
                               ? parts.destination
                               : options_.base_urls[static_cast<size_t>(*platform)];
  auto id = scheduler_.AddDestination({.tenant = parts.tenant,
                                       .platform = *platform,
                                       .credential = parts.tenant + "/" + parts.credential,
                                       .target = parts.destination,
                                       .origin = std::string(adapters::UrlOrigin(url))});
  if (!id) {
    return nullptr;
  }
  auto node =
      dests_
          .try_emplace(key, Dest{.queue = DestinationQueue(
                                     options_.read_ahead,
                                     // Several nodes accept for this one: the store says the
                                     // order, not the order in which they tell of it.
                                     ownership_ == nullptr ? DestinationQueue::Notified::kHold
                                                           : DestinationQueue::Notified::kRead,
                                     options_.held_budget == 0 ? nullptr : &hold_cap_)})
          .first;
  Dest& dest = node->second;
  UpdateHoldCap();
  dest.id = *id;
  dest.key = &node->first;
  dest.discord = *platform == Platform::kDiscord;
  dest.token_key = Intern(parts.tenant + "/" + parts.credential);
  dest.tenant = Intern(parts.tenant);
  dest.platform = Intern(parts.platform);
  dest.group_drained = &drain_rates_[{parts.tenant, parts.platform}];
  dest.last_active = clock_.Now();
  dest.hash = index_.Add(dest.key, dest.tenant);
  dest.shard = shard;
  if (id->value >= by_id_.size()) {
    by_id_.resize(id->value + 1, nullptr);
  }
  by_id_[id->value] = &dest;
  metrics_.Set(GaugeId::kDestinations, {}, static_cast<double>(dests_.size()));
  if (pauses_ != nullptr && !pauses_->empty()) {
    ApplyPause(dest);
  }
  return &dest;
}

void DeliveryLoop::UpdateHoldCap() {
  if (options_.held_budget != 0) {
    hold_cap_ = std::max<size_t>(1, options_.held_budget / std::max<size_t>(1, dests_.size()));
  }
}

void DeliveryLoop::Notify(const Delivery& d) {
  if (!storage::IsWaiting(d.state) || in_flight_.count(d.id) != 0) {
    return;
  }
  Dest* dest = Ensure(storage::DestinationKeyOf(d));
  if (dest == nullptr || !Owned(*dest)) {
    return;
  }
  dest->last_active = clock_.Now();
  if (dest->queue.Notify(PendingOf(d))) {
    OfferHead(*dest);
  }
  Reindex(*dest);
  Fetch(*dest);
}

void DeliveryLoop::Fetch(Dest& dest) {
  if (!Owned(dest)) {
    return;
  }
  auto plan = dest.queue.StartFetch(static_cast<size_t>(dest.in_flight));
  if (!plan) {
    return;
  }
  asio::post(storage_, [this, &store = store_, &io = io_, alive = alive_, key = *dest.key,
                        plan = std::move(*plan)] {
    auto work = store.PendingFor(key, plan.after, plan.limit);
    asio::post(io, [this, alive, key, work = std::move(work)]() mutable {
      if (*alive) {
        OnFetched(key, std::move(work));
      }
    });
  });
}

void DeliveryLoop::OnFetched(const std::string& key, Result<storage::DestinationWork> work) {
  auto it = dests_.find(key);
  if (it == dests_.end()) {
    return;
  }
  Dest& dest = it->second;
  if (!Owned(dest)) {
    dest.queue.FetchFailed();  // what it read is another node's now
    Disown(it);
    return;
  }
  if (!work) {
    dest.queue.FetchFailed();
    failed_fetches_.insert(key);  // read again when the back-off is over
    OnStoreTrouble("read", work.error());
    return;
  }
  std::vector<PendingDelivery> waiting;
  waiting.reserve(work->deliveries.size());
  for (const Delivery& d : work->deliveries) {
    if (storage::IsWaiting(d.state) && in_flight_.count(d.id) == 0) {
      waiting.push_back(PendingOf(d));
    }
  }
  std::string last = work->deliveries.empty() ? std::string() : work->deliveries.back().id;
  for (const storage::CorruptRecord& record : work->corrupt) {
    last = std::max(last, record.id);
    Repair(key, record);
  }
  if (dest.queue.Fetched(std::move(waiting), work->deliveries.size() + work->corrupt.size(),
                         last)) {
    OfferHead(dest);
  }
  Reindex(dest);
  Fetch(dest);  // more to read when the page was full (or the cursor moved back meanwhile)
  SchedulePump();
}

void DeliveryLoop::OfferHead(Dest& dest) {
  const PendingDelivery* head = dest.queue.head();
  if (head == nullptr || OfferedIs(dest, head->id) || !Owned(dest)) {
    return;
  }
  if (dest.offered_form != pacing::IdForm::kNone && OfferedText(dest) < head->id) {
    return;  // the Scheduler holds an earlier one (its record changed meanwhile); it goes first
  }
  if (scheduler_.Offer(dest.id, WorkItemFor(*head, LoopTimeOf(clock_))).ok()) {
    SetOffered(dest, head->id);
    SchedulePump();
  }
}

void DeliveryLoop::BudgetsChanged() { SchedulePump(); }

void DeliveryLoop::SchedulePump() {
  if (pump_scheduled_ || draining_) {
    return;
  }
  pump_scheduled_ = true;
  asio::post(io_, [this, alive = alive_] {
    if (*alive) {
      pump_scheduled_ = false;
      Pump();
    }
  });
}

void DeliveryLoop::Pump() {
  if (!store_writable_) {
    timer_.cancel();
    return;  // SetStoreWritable(true) pumps again
  }
  if (store_pause_until_) {
    const SteadyTime now = clock_.Now();
    if (now < *store_pause_until_) {
      timer_.expires_after(*store_pause_until_ - now);
      timer_.async_wait([this, alive = alive_](const boost::system::error_code& ec) {
        if (!ec && *alive) {
          Pump();
        }
      });
      return;
    }
    store_pause_until_.reset();
    RetryFetches();
  }
  while (!draining_) {
    Decision decision = scheduler_.Next();
    if (decision.kind == Decision::Kind::kDispatch) {
      Dispatch(decision);
      continue;
    }
    SendGranted();  // Next() may have given back a kept connection to a waiting request
    if (decision.kind == Decision::Kind::kWait) {
      timer_.expires_after(decision.wake_at - clock_.Now());
      timer_.async_wait([this, alive = alive_](const boost::system::error_code& ec) {
        if (!ec && *alive) {
          Pump();
        }
      });
    } else {
      timer_.cancel();
    }
    return;
  }
}

void DeliveryLoop::Dispatch(const Decision& decision) {
  Dest* found = ById(decision.destination);
  if (found == nullptr) {
    return;
  }
  Dest& dest = *found;
  const std::string key = *dest.key;
  ClearOffered(dest);
  if (!Owned(dest)) {
    // Its shard is being handed over (or this node's lease may lapse): not leased, not sent;
    // the Scheduler's slot goes back, and the destination is forgotten here.
    pacing::DeliveryOutcome aborted{.transport = pacing::TransportResult::kCancelled};
    scheduler_.OnOutcome(dest.id, decision.sequence, aborted, {}).status().IgnoreError();
    Disown(dests_.find(key));
    return;
  }
  dest.last_active = clock_.Now();
  uint32_t cost = 1;
  if (const PendingDelivery* head = dest.queue.head(); head && head->id == decision.delivery_id) {
    cost = head->cost;
    dest.queue.TakeHead();
    Reindex(dest);
  }
  TakeBudgets(dest, cost);
  ++dest.in_flight;
  in_flight_[decision.delivery_id] = {key, decision.sequence, clock_.Now()};
  OfferHead(dest);  // the next head, already read ahead
  Fetch(dest);
  // Only a waiting delivery may be leased (state_machine.cc): a cancelled one fails here.
  storage::StateChange lease{.to = DeliveryState::kInFlight, .at_ms = WallMs(), .as_owner = true};
  leases_.Submit(decision.delivery_id, std::move(lease),
                 [this, key, id = decision.delivery_id, sequence = decision.sequence](
                     Result<Delivery> leased) { OnLeased(key, sequence, id, std::move(leased)); });
}

void DeliveryLoop::TakeBudgets(const Dest& dest, uint32_t cost) {
  Result<pacing::PathScopes> path = scheduler_.ScopesOf(dest.id);
  if (!path) {
    return;
  }
  const SteadyTime now = clock_.Now();
  for (uint8_t i = 0; i < path->size; ++i) {
    const pacing::PathScopes::Scope& scope = path->scopes[i];
    const double use =
        budget_use_.Take(*dest.tenant, scope.name, scope.key, scope.budget, cost, now);
    if (use >= kNearLimitRatio) {
      metrics_.Inc(CounterId::kBudgetNearLimit,
                   {{"tenant", *dest.tenant}, {"budget", pacing::BudgetNameString(scope.name)}},
                   cost);
    }
  }
}

void DeliveryLoop::OnLeased(const std::string& key, uint64_t sequence, const std::string& id,
                            Result<Delivery> leased) {
  if (leased && leased->state != DeliveryState::kInFlight) {
    leased = Status::FailedPrecondition(
        fmt::format("delivery {} is {}", id, storage::StateName(leased->state)));
  }
  if (leased) {
    OnStoreOk();
    SendWhenConnected(key, sequence, std::move(*leased));
    return;
  }
  if (Passing(leased.error()) && Owned(dests_.at(key))) {
    OnStoreTrouble("lease", leased.error());  // not sent: leased again after the back-off
  }
  // Cancelled or changed meanwhile (or not leased at all): release the scheduler's slot,
  // nothing to persist. What was read ahead may be as stale: read the destination again.
  in_flight_.erase(id);
  Dest& dest = dests_.at(key);
  --dest.in_flight;
  pacing::DeliveryOutcome aborted{.transport = pacing::TransportResult::kCancelled};
  scheduler_.OnOutcome(dest.id, sequence, aborted, {}).status().IgnoreError();
  dest.queue.Reset();
  Reindex(dest);
  if (Owned(dest)) {
    Fetch(dest);
  } else {
    Disown(dests_.find(key));
  }
  SchedulePump();
  CheckDrained();
}

void DeliveryLoop::SendWhenConnected(const std::string& key, uint64_t sequence, Delivery d) {
  const uint64_t token = ++next_send_token_;
  if (!scheduler_.StartSend(dests_.at(key).id, token, d.priority)) {
    parked_.emplace(token, Parked{key, sequence, std::move(d)});
    return;
  }
  Send(key, sequence, std::move(d));
  SendGranted();  // a Send that failed at once freed its connection
}

void DeliveryLoop::SendGranted() {
  if (sending_granted_) {
    return;  // the running call sends them
  }
  sending_granted_ = true;
  for (std::vector<uint64_t> granted = scheduler_.TakeSendGrants(); !granted.empty();
       granted = scheduler_.TakeSendGrants()) {
    for (const uint64_t token : granted) {
      auto it = parked_.find(token);
      if (it == parked_.end()) {
        continue;
      }
      Parked parked = std::move(it->second);
      parked_.erase(it);
      Send(parked.dest_key, parked.sequence, std::move(parked.delivery));
    }
  }
  sending_granted_ = false;
}

bool DeliveryLoop::ReturnUnowned(const std::string& key, uint64_t sequence, const Delivery& d) {
  Dest& dest = dests_.at(key);
  if (Owned(dest)) {
    return false;
  }
  // The shard went to another node (or this node's lease may lapse) while the delivery waited
  // for a connection or its time to leave: not sent. It goes back to queued, as its owner's
  // write: refused when the other node took it over already, whose copy then stands.
  scheduler_.EndSend(dest.id);
  pacing::DeliveryOutcome aborted{.transport = pacing::TransportResult::kCancelled};
  scheduler_.OnOutcome(dest.id, sequence, aborted, {}).status().IgnoreError();
  in_flight_.erase(d.id);
  --dest.in_flight;
  const int64_t now_ms = WallMs();
  storage::StateChange back{
      .to = DeliveryState::kQueued, .at_ms = now_ms, .next_attempt_ms = now_ms, .as_owner = true};
  outcomes_.Submit(d.id, std::move(back),
                   [this, key](Result<Delivery> stored) { OnPersisted(key, std::move(stored)); });
  return true;
}

void DeliveryLoop::Send(const std::string& key, uint64_t sequence, Delivery d) {
  if (ReturnUnowned(key, sequence, d)) {
    return;
  }
  auto adapter = adapters_(d.platform);
  auto credential = credentials_.Find(d.tenant, d.credential);
  Result<adapters::HttpRequest> request = Status::NotFound("no adapter");
  if (!adapter) {
    request = adapter.error();
  } else if (!credential) {
    request = Status::NotFound(
        fmt::format("credential {} of tenant {} is not registered", d.credential, d.tenant));
  } else {
    std::optional<Result<adapters::HttpRequest>> built =
        RequestWithToken(key, sequence, d, **adapter, *credential);
    if (!built) {
      return;  // waits for its token, or failed as a connection would
    }
    request = std::move(*built);
  }
  if (!request) {
    // Nothing was sent. A bad delivery (InvalidArgument) is dead with the reason; a missing or
    // unusable credential is the operator's to fix, so the destination is disabled and the
    // delivery waits, deferred with destination_disabled.
    const pacing::DestinationId id = dests_.at(key).id;
    scheduler_.EndSend(id);  // its connection was never used
    pacing::DeliveryOutcome outcome{.permanent = true, .platform_error = "invalid_payload"};
    scheduler_.OnOutcome(id, sequence, outcome, {}).status().IgnoreError();
    if (request.error().code() != Status::Code::kInvalidArgument) {
      const std::string why = "credential_unusable: " + request.error().message();
      scheduler_.Disable(id, why).IgnoreError();
      LogEvent(LogLevel::kWarn, "destination_disabled", {{"destination", key}, {"reason", why}});
      Verdict wait{.kind = VerdictKind::kDefer, .next_attempt = clock_.Now()};
      wait.deferral = {.reason = pacing::DeferReason::kDestinationDisabled, .detail = why};
      Finish(key, d, wait, std::nullopt);
      return;
    }
    Verdict dead{.kind = VerdictKind::kDead,
                 .dead_reason = "invalid_payload: " + request.error().message()};
    Finish(key, d, dead, std::nullopt);
    return;
  }
  const adapters::PlatformAdapter* a = *adapter;
  // The one before it on its key may have left late: then this one waits until it would reach
  // the platform as spaced as the meters let them go (Scheduler::DepartAt).
  auto flying = in_flight_.find(d.id);
  const SteadyTime at = flying == in_flight_.end()
                            ? clock_.Now()
                            : scheduler_.DepartAt(dests_.at(key).id, flying->second.let_go, d.cost);
  if (at > clock_.Now()) {
    metrics_.Inc(CounterId::kSendsHeld, {{"platform", d.platform}});
    const bool first = held_.empty() || at < held_.begin()->first;
    held_.emplace(at, HeldSend{std::move(*request), key, sequence, std::move(d), a});
    if (first) {
      ArmHeld();
    }
    return;
  }
  Transmit(std::move(*request), key, sequence, std::move(d), *a);
}

void DeliveryLoop::ArmHeld() {
  if (held_.empty()) {
    return;
  }
  held_timer_.expires_after(held_.begin()->first - clock_.Now());
  held_timer_.async_wait([this, alive = alive_](const boost::system::error_code& ec) {
    if (!ec && *alive) {
      SendHeld();
    }
  });
}

void DeliveryLoop::SendHeld() {
  const SteadyTime now = clock_.Now();
  while (!held_.empty() && held_.begin()->first <= now) {
    auto node = held_.extract(held_.begin());
    HeldSend& held = node.mapped();
    if (ReturnUnowned(held.dest_key, held.sequence, held.delivery)) {
      continue;
    }
    Transmit(std::move(held.request), held.dest_key, held.sequence, std::move(held.delivery),
             *held.adapter);
  }
  ArmHeld();
}

void DeliveryLoop::Transmit(adapters::HttpRequest request, const std::string& key,
                            uint64_t sequence, Delivery d,
                            const adapters::PlatformAdapter& adapter) {
  transport_.Send(std::move(request), [this, alive = alive_, key, sequence, d = std::move(d),
                                       a = &adapter](Result<adapters::HttpResponse> r) mutable {
    if (*alive) {
      OnResponse(key, sequence, d, *a, std::move(r));
    }
  });
}

namespace {

// The credential an access token belongs to: one per platform, tenant and credential name.
std::string TokenKey(const Delivery& d) { return d.platform + "/" + d.tenant + "/" + d.credential; }

}  // namespace

std::optional<Result<adapters::HttpRequest>> DeliveryLoop::RequestWithToken(
    const std::string& key, uint64_t sequence, Delivery& d,
    const adapters::PlatformAdapter& adapter, const adapters::Credential& credential) {
  // Only an OAuth2 platform's credential with a client id has a token to fetch; the request for
  // it is built only when a fetch starts.
  if (!adapter.UsesAccessToken() || credential.client_id.empty()) {
    return adapter.BuildRequest(d, credential, clock_.WallNow());
  }
  const std::string token_key = TokenKey(d);
  switch (tokens_.Look(token_key, clock_.Now())) {
    case AccessTokens::State::kUsable: {
      adapters::Credential with = credential;
      with.access_token = tokens_.Use(token_key, clock_.Now());
      if (auto it = in_flight_.find(d.id); it != in_flight_.end()) {
        it->second.access_token = with.access_token;
      }
      return adapter.BuildRequest(d, with, clock_.WallNow());
    }
    case AccessTokens::State::kFetching:
      tokens_.Wait(token_key, {key, sequence, std::move(d)});
      return std::nullopt;
    case AccessTokens::State::kNeeded: {
      std::optional<adapters::HttpRequest> token_request = adapter.TokenRequest(credential);
      if (!token_request) {
        return adapter.BuildRequest(d, credential, clock_.WallNow());  // its FailedPrecondition
      }
      tokens_.Wait(token_key, {key, sequence, std::move(d)});
      FetchToken(token_key, adapter, std::move(*token_request));
      return std::nullopt;
    }
    case AccessTokens::State::kFailed:
      break;
  }
  const Status& error = tokens_.error(token_key);
  if (error.code() == Status::Code::kRejected) {
    // The endpoint refused the client: the credential is wrong (its destinations disabled).
    return Result<adapters::HttpRequest>(Status::FailedPrecondition(error.message()));
  }
  OnResponse(key, sequence, d, adapter, Status::Unavailable(error.message()));
  return std::nullopt;
}

void DeliveryLoop::FetchToken(const std::string& token_key,
                              const adapters::PlatformAdapter& adapter,
                              adapters::HttpRequest request) {
  tokens_.Started(token_key);
  transport_.Send(std::move(request), [this, alive = alive_, token_key,
                                       a = &adapter](Result<adapters::HttpResponse> r) {
    if (!*alive) {
      return;
    }
    Result<adapters::AccessToken> token = a->ReadToken(r);
    std::vector<AccessTokens::Waiting> waiting;
    if (token) {
      waiting = tokens_.Fetched(token_key, std::move(token->token), token->expires_in,
                                token->refresh_before, clock_.Now());
    } else {
      LogEvent(LogLevel::kWarn, "access_token_failed",
               {{"credential", token_key}, {"error", token.error().message()}});
      waiting = tokens_.Failed(token_key, token.error(), clock_.Now());
    }
    metrics_.Inc(CounterId::kAccessTokenFetches,
                 {{"platform", std::string(PlatformString(a->platform()))},
                  {"result", token ? "ok" : "error"}});
    for (AccessTokens::Waiting& w : waiting) {
      Send(w.dest_key, w.sequence, std::move(w.delivery));
    }
    SendGranted();
  });
}

void DeliveryLoop::OnResponse(const std::string& key, uint64_t sequence, const Delivery& d,
                              const adapters::PlatformAdapter& adapter,
                              Result<adapters::HttpResponse> r) {
  scheduler_.EndSend(dests_.at(key).id);
  HandleResponse(key, sequence, d, adapter, std::move(r));
  SendGranted();
}

void DeliveryLoop::HandleResponse(const std::string& key, uint64_t sequence, const Delivery& d,
                                  const adapters::PlatformAdapter& adapter,
                                  Result<adapters::HttpResponse> r) {
  adapters::AttemptReport report = adapter.Interpret(d, r, clock_.WallNow());
  Dest& dest = dests_.at(key);
  dest.last_active = clock_.Now();
  if (r && r->http2) {
    scheduler_.SetMultiplexed(dest.id).IgnoreError();  // a known destination: cannot fail
  }
  scheduler_.Observe(dest.id, report.observation).IgnoreError();  // bad observations are dropped
  if (dest.discord) {
    GuardDiscordToken(dest, report);
  }
  dest.last_headers = report.attempt.rate_limit_headers;
  dest.last_response_ms = report.attempt.at_ms;
  const pacing::AttemptInfo info{static_cast<int>(d.attempts), FromUnixMillis(d.created_ms)};
  Result<Verdict> verdict = scheduler_.OnOutcome(dest.id, sequence, report.outcome, info);
  // A destination (or credential) that can never work as configured is disabled; its
  // deliveries wait, deferred with the reason, for an operator to fix and re-enable it.
  std::optional<std::string> disabled = report.disable_destination;
  bool token_refused = false;
  if (report.access_token_rejected) {
    // A stale or revoked token is fetched again and the delivery sent again at once, without
    // counting an attempt; a token refused right after its fetch means the credential is wrong.
    auto it = in_flight_.find(d.id);
    const std::string used = it == in_flight_.end() ? std::string() : it->second.access_token;
    if (tokens_.Refused(TokenKey(d), used, clock_.Now())) {
      report.invalidate_credential = "a fresh access token was refused";
    } else {
      token_refused = true;
    }
  }
  if (report.invalidate_credential) {
    disabled = "credential_invalid: " + *report.invalidate_credential;
  }
  if (token_refused && verdict && !disabled) {
    verdict->kind = VerdictKind::kDefer;
    verdict->consumes_attempt = false;
    verdict->next_attempt = clock_.Now();
    verdict->deferral = {.reason = pacing::DeferReason::kBackoff, .detail = "access_token_refused"};
  }
  if (disabled) {
    scheduler_.Disable(dest.id, *disabled).IgnoreError();
    LogEvent(LogLevel::kWarn, "destination_disabled",
             {{"destination", key}, {"reason", *disabled}, {"delivery", d.id}});
    if (verdict) {
      verdict->kind = VerdictKind::kDefer;
      verdict->consumes_attempt = false;
      verdict->next_attempt = clock_.Now();
      verdict->deferral = {.reason = pacing::DeferReason::kDestinationDisabled,
                           .detail = *disabled};
    }
  }
  const std::string platform = d.platform;
  metrics_.Inc(CounterId::kPlatformResponses,
               {{"platform", platform}, {"code_class", CodeClass(report.outcome.http_status)}});
  if (report.outcome.http_status == 429) {
    metrics_.Inc(CounterId::kPlatform429, {{"platform", platform}});  // deprecated
  }
  // Per platform only: a destination label would grow with every destination ever seen (and
  // print Discord webhook tokens). Per-destination remaining is in GET /v1/destinations.
  if (report.observation.remaining && report.observation.limit && *report.observation.limit > 0) {
    metrics_.Observe(HistogramId::kBucketFillRatio, {{"platform", platform}},
                     1.0 - static_cast<double>(*report.observation.remaining) /
                               static_cast<double>(*report.observation.limit));
  }
  metrics_.Observe(HistogramId::kAttemptDuration, {{"platform", platform}},
                   static_cast<double>(report.attempt.duration_ms) / 1000.0);
  if (!verdict) {
    // Out of protocol (should not happen): keep the delivery, retry it after a minute.
    Verdict retry{.kind = VerdictKind::kDefer, .next_attempt = clock_.Now() + Millis(60'000)};
    retry.deferral.reason = pacing::DeferReason::kBackoff;
    retry.deferral.detail = verdict.error().message();
    Finish(key, d, retry, report.attempt);
    return;
  }
  if (report.outcome.throttled || report.outcome.http_status == 429) {
    metrics_.Inc(
        CounterId::kThrottles,
        {{"tenant", d.tenant}, {"platform", platform}, {"reason", verdict->deferral.ToString()}});
  }
  if (LogEnabled(LogLevel::kDebug)) {
    // The destination is redacted by the event log (no webhook token or URL secret).
    nlohmann::json fields = {{"delivery", d.id},
                             {"tenant", d.tenant},
                             {"platform", platform},
                             {"destination", d.destination},
                             {"status", report.outcome.http_status},
                             {"duration_ms", report.attempt.duration_ms},
                             {"outcome", OutcomeLabel(verdict->kind)}};
    if (verdict->kind == VerdictKind::kDefer) {
      fields["deferral"] = verdict->deferral.ToString();
    }
    if (!report.attempt.platform_error.empty()) {
      fields["platform_error"] = report.attempt.platform_error;
    }
    if (!d.traceparent.empty()) {
      fields["traceparent"] = d.traceparent;
    }
    LogEvent(LogLevel::kDebug, "attempt", fields);
  }
  Finish(key, d, *verdict, report.attempt, report.actual_cost);
}

void DeliveryLoop::Finish(const std::string& key, const Delivery& d, const Verdict& verdict,
                          std::optional<storage::Attempt> attempt,
                          std::optional<int64_t> actual_cost) {
  in_flight_.erase(d.id);
  Dest& dest = dests_.at(key);
  --dest.in_flight;
  const LoopTime now = LoopTimeOf(clock_);
  if (verdict.kind != VerdictKind::kDefer) {
    if (!dest.drained) {
      dest.drained = std::make_unique<DrainRate>();
    }
    dest.drained->Count(now.wall_ms);
    dest.group_drained->Count(now.wall_ms);
  }
  storage::StateChange change = StateChangeFor(verdict, now, std::move(attempt));
  change.as_owner = true;
  if (change.to == storage::DeliveryState::kDelivered) {
    change.actual_cost = actual_cost;
  }
  if (verdict.kind == VerdictKind::kDefer) {
    metrics_.Inc(CounterId::kDeferrals,
                 {{"tenant", d.tenant}, {"platform", d.platform}, {"reason", change.reason}});
  }
  metrics_.Inc(CounterId::kDeliveries, {{"platform", d.platform},
                                        {"outcome", OutcomeLabel(verdict.kind)},
                                        {"priority", pacing::PriorityName(d.priority)}});
  if (verdict.kind == VerdictKind::kDead) {
    nlohmann::json fields = {{"delivery", d.id},
                             {"tenant", d.tenant},
                             {"platform", d.platform},
                             {"destination", d.destination},
                             {"reason", change.reason}};
    if (!d.traceparent.empty()) {
      fields["traceparent"] = d.traceparent;
    }
    LogEvent(LogLevel::kInfo, "dead_letter", fields);
  }
  outcomes_.Submit(d.id, std::move(change),
                   [this, key](Result<Delivery> stored) { OnPersisted(key, std::move(stored)); });
  SchedulePump();
}

void DeliveryLoop::OnPersisted(const std::string& key, Result<Delivery> stored) {
  auto it = dests_.find(key);
  if (it == dests_.end()) {
    // Forgotten meanwhile (EvictIdle): a delivery waiting again brings it back.
    if (stored && storage::IsWaiting(stored->state)) {
      Notify(*stored);
    }
    CheckDrained();
    return;
  }
  Dest& dest = it->second;
  if (!stored && stored.error().code() == Status::Code::kRejected) {
    // Another node took the shard over while this attempt was out: its copy stands (the
    // delivery may go out once more from there: at least once).
    metrics_.Inc(CounterId::kStoreErrors, {{"operation", "outcome_fenced"}});
    LogEvent(LogLevel::kWarn, "outcome_fenced",
             {{"destination", key}, {"error", stored.error().ToString()}});
  } else if (!Owned(dest)) {
    // Written by this node, now another's: nothing more of it is paced here.
  } else if (stored && storage::IsWaiting(stored->state)) {
    // An earlier delivery is waiting again: it becomes the head (order is kept).
    if (dest.queue.Add(PendingOf(*stored))) {
      OfferHead(dest);
    }
    Reindex(dest);
  } else if (!stored) {
    // Refused for good (failed writes are retried until they land): the delivery changed
    // under its lease, which only a reopen of the store after a write fault can do (the
    // outcome reached the disk after all). The disk's version stands.
    metrics_.Inc(CounterId::kStoreErrors, {{"operation", "outcome_refused"}});
    LogEvent(LogLevel::kError, "outcome_not_written",
             {{"destination", key}, {"error", stored.error().ToString()}});
  }
  if (!Owned(dest)) {
    Disown(it);
  } else {
    Fetch(dest);
  }
  SchedulePump();
  CheckDrained();
}

void DeliveryLoop::OnStoreTrouble(std::string_view operation, const Status& error) {
  metrics_.Inc(CounterId::kStoreErrors, {{"operation", operation}});
  store_backoff_ = store_backoff_.count() == 0
                       ? options_.first_store_retry
                       : std::min(store_backoff_ * 2, options_.max_store_retry);
  store_pause_until_ = clock_.Now() + store_backoff_;
  LogEvent(LogLevel::kWarn, "store_call_failed",
           {{"operation", operation},
            {"error", error.ToString()},
            {"retry_in_ms", store_backoff_.count()}});
  SchedulePump();  // arms the timer for the end of the pause
}

void DeliveryLoop::RetryFetches() {
  std::set<std::string> keys;
  keys.swap(failed_fetches_);
  for (const std::string& key : keys) {
    if (auto it = dests_.find(key); it != dests_.end()) {
      Fetch(it->second);
    }
  }
}

void DeliveryLoop::SetStoreWritable(bool writable) {
  if (writable == store_writable_) {
    return;
  }
  store_writable_ = writable;
  if (!writable) {
    return;
  }
  store_backoff_ = Millis(0);
  store_pause_until_.reset();
  RetryFetches();
  leases_.RetryNow();
  outcomes_.RetryNow();
  SchedulePump();
}

void DeliveryLoop::WakeForTest() {
  leases_.Poke();
  outcomes_.Poke();
  SendHeld();
  SchedulePump();
}

void DeliveryLoop::Repair(const std::string& key, const storage::CorruptRecord& record) {
  if (!repairing_.insert(record.id).second) {
    return;
  }
  LogEvent(LogLevel::kError, "corrupt_record",
           {{"destination", key}, {"delivery", record.id}, {"error", record.error}});
  asio::post(storage_, [this, &store = store_, &io = io_, alive = alive_, key, id = record.id,
                        now_ms = WallMs()] {
    auto dead = store.MoveCorruptToDead(id, key, now_ms);
    asio::post(io, [this, alive, id, dead = std::move(dead)] {
      if (!*alive) {
        return;
      }
      repairing_.erase(id);
      if (dead) {
        metrics_.Inc(CounterId::kCorruptRecords);
        LogEvent(LogLevel::kWarn, "corrupt_record_dead",
                 {{"delivery", id}, {"reason", dead->reason}});
      } else {
        // It stays where it is, skipped by every read, and is tried again when read again.
        LogEvent(LogLevel::kError, "corrupt_record_not_moved",
                 {{"delivery", id}, {"error", dead.error().ToString()}});
      }
    });
  });
}

void DeliveryLoop::Drain(std::function<void()> done) {
  draining_ = true;
  timer_.cancel();
  maintenance_.cancel();
  drained_ = std::move(done);
  CheckDrained();
}

void DeliveryLoop::CheckDrained() {
  if (draining_ && in_flight_.empty() && leases_.pending() == 0 && outcomes_.pending() == 0 &&
      drained_) {
    auto done = std::move(drained_);
    drained_ = nullptr;
    *alive_ = false;
    done();
  }
}

void DeliveryLoop::GuardDiscordToken(Dest& dest, const adapters::AttemptReport& report) {
  const SteadyTime now = clock_.Now();
  std::optional<SteadyTime> stop = discord_invalid_.Record(*dest.token_key, report, now);
  if (shared_invalid_ != nullptr && adapters::InvalidRequestCounter::Counts(
                                        report.attempt.http_status, report.observation.scope)) {
    shared_invalid_->Add(*dest.token_key, [this, alive = alive_, key = *dest.key,
                                           token = *dest.token_key, stopped = stop.has_value()](
                                              adapters::RedisInvalidRequests::Answer slots) {
      if (!*alive || !slots) {
        return;  // Redis away: this node's own count guarded above
      }
      const SteadyTime at = clock_.Now();
      discord_invalid_.MergeShared(token, *slots, at);
      std::optional<SteadyTime> until = discord_invalid_.StopUntil(token, at);
      auto it = dests_.find(key);
      if (until && !stopped && it != dests_.end()) {
        StopDiscordToken(it->second, *until, at);
      }
    });
  }
  if (stop) {
    StopDiscordToken(dest, *stop, now);
  }
}

void DeliveryLoop::StopDiscordToken(Dest& dest, SteadyTime until, SteadyTime now) {
  // Park every bucket of the token, as a global 429 would, until enough invalid requests have
  // left the window.
  pacing::RateLimitObservation park;
  park.retry_after = std::chrono::duration_cast<Millis>(until - now);
  park.global = true;
  park.scope = pacing::RateLimitScope::kGlobal;
  scheduler_.Observe(dest.id, park).IgnoreError();
  metrics_.Inc(CounterId::kDiscordInvalidRequestStops, {{"credential", *dest.token_key}});
  LogEvent(LogLevel::kWarn, "discord_token_stopped",
           {{"credential", *dest.token_key},
            {"invalid_requests", discord_invalid_.Count(*dest.token_key, now)},
            {"stop_ms", park.retry_after->count()}});
}

size_t DeliveryLoop::EvictIdle() {
  const SteadyTime now = clock_.Now();
  size_t evicted = 0;
  for (auto it = dests_.begin(); it != dests_.end();) {
    const Dest& dest = it->second;
    bool idle = dest.queue.size() == 0 && !dest.queue.fetching() && dest.in_flight == 0 &&
                dest.offered_form == pacing::IdForm::kNone && !dest.writing_wait &&
                now - dest.last_active >= options_.destination_idle;
    if (idle) {
      auto view = scheduler_.Inspect(dest.id);
      idle = view && !view->disabled;
    }
    // RemoveDestination (in Forget) refuses one with a head or work in flight: the Scheduler's
    // word wins.
    auto next = std::next(it);
    if (idle && Forget(it)) {
      ++evicted;
    }
    it = next;
  }
  return evicted;
}

bool DeliveryLoop::Enable(const std::string& destination_key) {
  auto it = dests_.find(destination_key);
  if (it == dests_.end()) {
    return false;
  }
  scheduler_.Enable(it->second.id).IgnoreError();
  LogEvent(LogLevel::kInfo, "destination_enabled", {{"destination", destination_key}});
  SchedulePump();
  return true;
}

bool DeliveryLoop::ApplyPause(Dest& dest) {
  const Pause* pause = nullptr;
  if (pauses_ != nullptr && !pauses_->empty()) {
    // The key's parts without splitting it again: token_key is "<tenant>/<credential>" and the
    // key "<platform>\x1f<tenant>\x1f<credential>\x1f<destination>".
    const std::string_view credential =
        std::string_view(*dest.token_key).substr(dest.tenant->size() + 1);
    const std::string_view destination = std::string_view(*dest.key).substr(
        dest.platform->size() + dest.tenant->size() + credential.size() + 3);
    pause = pauses_->Match(*dest.tenant, *dest.platform, credential, destination);
  }
  const std::string_view want = pause == nullptr ? std::string_view() : pause->id;
  if (want == dest.pause_id) {
    return false;
  }
  if (dest.pause_id.empty()) {
    CountPaused(dest, +1);
  } else if (want.empty()) {
    CountPaused(dest, -1);
  }
  if (pause != nullptr) {
    // The detail a deferral shows: which pause, and the operator's note.
    std::string why = pause->id;
    if (!pause->reason.empty()) {
      why += ": " + pause->reason;
    }
    scheduler_.Pause(dest.id, std::move(why)).IgnoreError();  // a known destination
  } else {
    scheduler_.Resume(dest.id).IgnoreError();
  }
  dest.pause_id = want;
  return true;
}

void DeliveryLoop::CountPaused(const Dest& dest, int delta) {
  auto [it, added] = paused_.try_emplace({*dest.tenant, *dest.platform}, 0);
  it->second += delta;
  const Metrics::Labels labels = {{"tenant", *dest.tenant}, {"platform", *dest.platform}};
  if (it->second <= 0) {
    paused_.erase(it);
    metrics_.Erase(GaugeId::kPaused, labels);
  } else {
    metrics_.Set(GaugeId::kPaused, labels, static_cast<double>(it->second));
  }
}

void DeliveryLoop::PausesChanged() {
  size_t changed = 0;
  for (auto& [key, dest] : dests_) {
    changed += ApplyPause(dest) ? 1 : 0;
  }
  if (changed != 0) {
    SchedulePump();
  }
}

std::optional<double> DeliveryLoop::DrainedPerSecond(const std::string& tenant,
                                                     const std::string& platform) const {
  auto it = drain_rates_.find({tenant, platform});
  return it == drain_rates_.end() ? std::nullopt : it->second.PerSecond(LoopTimeOf(clock_).wall_ms);
}

std::optional<DestinationPosition> DeliveryLoop::WalkDeferrals(
    const std::optional<DestinationPosition>& after, size_t max_steps,
    const DeferralVisit& visit) const {
  return index_.Walk(/*by_deferral=*/true, /*tenant=*/"", after, std::max<size_t>(1, max_steps),
                     [&](const std::string& key, const DestinationPosition& at) {
                       // The platform is the key's first part: no lookup of the destination
                       // (at 10,000 tenants, ~6% of a /metrics text's CPU).
                       visit(at.tenant, std::string_view(key).substr(0, key.find('\x1f')),
                             at.deferral_ms);
                       return true;
                     });
}

DestinationInfo DeliveryLoop::InfoOf(const Dest& dest) const {
  DestinationInfo info;
  storage::DestinationParts parts;
  if (storage::SplitDestinationKey(*dest.key, parts)) {
    info.platform = parts.platform;
    info.tenant = parts.tenant;
    info.credential = parts.credential;
    info.destination = parts.destination;
  }
  if (auto view = scheduler_.Inspect(dest.id)) {
    info.view = *view;
  }
  info.last_headers = dest.last_headers;
  info.last_response_ms = dest.last_response_ms;
  info.oldest_deferral_ms = dest.queue.oldest_deferral_ms();
  info.pause_id = dest.pause_id;
  info.shadow_checked = dest.shadow_checked;
  info.shadow_throttled = dest.shadow_throttled;
  if (dest.drained) {
    info.drained_per_s =
        dest.drained->PerSecond(LoopTimeOf(clock_).wall_ms, DrainRate::kEnoughForOne);
  }
  return info;
}

std::vector<DestinationInfo> DeliveryLoop::Destinations() const {
  std::vector<DestinationInfo> out;
  for (const auto& [key, dest] : dests_) {
    storage::DestinationParts parts;
    if (!storage::SplitDestinationKey(key, parts)) {
      continue;
    }
    out.push_back(InfoOf(dest));
  }
  return out;
}

void DeliveryLoop::Reindex(Dest& dest) {
  const int64_t oldest = dest.queue.oldest_deferral_ms();
  if (oldest != dest.indexed_deferral_ms) {
    index_.MoveDeferral(dest.key, dest.tenant, dest.hash, dest.indexed_deferral_ms, oldest);
    dest.indexed_deferral_ms = oldest;
  }
}

DestinationPage DeliveryLoop::ListDestinations(const DestinationQuery& q) const {
  DestinationPage page;
  const size_t limit = std::max<size_t>(1, q.limit);
  page.next =
      index_.Walk(q.by_oldest_deferral, q.tenant, q.after, std::max(q.max_scan, limit),
                  [&](const std::string& key, const DestinationPosition&) {
                    ++page.scanned;
                    const Dest& dest = dests_.at(key);
                    if (!q.platform.empty() && *dest.platform != q.platform) {
                      return true;
                    }
                    if (q.disabled || !q.deferral_prefix.empty()) {
                      auto view = scheduler_.Inspect(dest.id);
                      if (!view || (q.disabled && view->disabled != *q.disabled) ||
                          (!q.deferral_prefix.empty() &&
                           !view->deferral.ToString().starts_with(q.deferral_prefix))) {
                        return true;
                      }
                    }
                    if (!q.destination_prefix.empty()) {
                      storage::DestinationParts parts;
                      if (!storage::SplitDestinationKey(key, parts) ||
                          !RedactDestination(parts.destination).starts_with(q.destination_prefix)) {
                        return true;
                      }
                    }
                    page.items.push_back(InfoOf(dest));
                    return page.items.size() < limit;
                  });
  return page;
}

DeliveryLoop::ShownKeyMatches DeliveryLoop::FindByShownKey(
    std::string_view shown, std::string_view tenant,
    const std::optional<DestinationPosition>& after, size_t max_scan) const {
  ShownKeyMatches out;
  out.next = index_.Walk(/*by_deferral=*/false, tenant, after, std::max<size_t>(1, max_scan),
                         [&](const std::string& key, const DestinationPosition&) {
                           if (DestinationKeyText(key) == shown) {
                             out.keys.push_back(key);
                           }
                           return true;
                         });
  return out;
}

}  // namespace egress::service
