#include "dispatcher/pacing/adaptive_pace.h"

#include <algorithm>
#include <cmath>

namespace egress::pacing {

namespace {
// Slow start grows once a third of a window's worth of the level is delivered without a 429:
// by 4 below 8 units (one delivery at 1/s takes a second: two doublings would take 1.5), by 2
// above. An overshoot shows as a 429 within that third unless a burst hides it, and is then
// measured (below) instead of waited out.
constexpr int64_t kSlowStartShare = 3;
constexpr int64_t kSlowStartFactor = 2;
constexpr int64_t kSlowStartLowFactor = 4;
constexpr int64_t kSlowStartLowLevel = 8;
// The measurement after slow start's first failed step: at least a quarter of a window and
// 8 deliveries (at most half a window), ended early by its 4th 429 after the first, or when the
// first and three more bring no delivery (a window's count is spent: a rate cannot be read).
// Its estimate is held to at least 3/4 of the level that held before the step (a few
// deliveries in a short span are a coarse estimate).
constexpr int64_t kMeasureShare = 4;
constexpr int64_t kMeasureDeliveries = 8;
constexpr int64_t kMeasureThrottles = 4;
constexpr int64_t kMeasureRefusedRun = 3;
constexpr int64_t kMeasureFloorPercent = 75;
// A measurement shorter than this share of a window reads the rate from the share of requests
// that got through as well (EndMeasure).
constexpr int64_t kMeasureShortShare = 16;
// A refused canary's first wait is this share of a window; each further one doubles.
constexpr int64_t kGateFirstShare = 32;
// ... and at most this share (and max_park): a fixed window's end is found within a quarter of a
// window.
constexpr int64_t kGateMostShare = 4;

int64_t WindowNs(const Budget& budget) { return std::max<int64_t>(1, budget.scale_ms) * 1'000'000; }
// The least span of a measurement; it counts at most twice this.
int64_t MeasureLeastNs(const Budget& budget) { return WindowNs(budget) / kMeasureShare; }
}  // namespace

AdaptivePace::AdaptivePace(const AdaptivePaceOptions& options, const Budget& ceiling,
                           bool ceiling_learned)
    : options_(options),
      ceiling_(ceiling),
      ceiling_learned_(ceiling_learned),
      limit_(ceiling.limit) {}

bool AdaptivePace::OnThrottle(int64_t now_ns, const RecentWindow& recent) {
  if (measuring_) {
    if (recent.known()) {
      recent_ = recent;
    }
    ++measure_throttled_;
    if (measure_throttled_ < kMeasureThrottles && !MeasureDone(now_ns) &&
        (measure_ok_ > 0 || measure_throttled_ < kMeasureRefusedRun)) {
      return false;
    }
    EndMeasure(now_ns);
    ++throttles_;
    return true;
  }
  if (now_ns >= hold_until_ns_ && slow_start_ && probing_ && last_good_ > 0 && !measured_) {
    // Slow start's step overshot. Its level is pressed on for a moment to read the platform's
    // rate from what it lets through (EndMeasure), instead of going back half a step and
    // climbing again a window at a time.
    measuring_ = true;
    measured_ = true;
    measure_ok_ = 0;
    measure_throttled_ = 0;
    measure_start_ns_ = now_ns;
    before_ = limit_;
    return false;
  }
  if (now_ns < hold_until_ns_) {
    ++cohort_throttled_;
    if (recent.known()) {
      recent_ = recent;
    }
    Refine();
    return false;
  }
  adopted_hold_ = false;
  before_ = limit_;
  recent_ = recent;
  last_hold_end_ns_ = hold_until_ns_;
  cohort_ok_ = 0;
  cohort_throttled_ = 1;
  // A 429 within the first window after an increase: that probe failed, the level before it
  // was fine. Back to it, and probe again only after twice as many windows.
  probe_failed_ = probing_ && last_good_ > 0;
  doubling_failed_ = probe_failed_ && slow_start_;
  const bool was_slow_start = slow_start_;
  slow_start_ = !probe_failed_ && recent.known() && recent.partial;
  if (slow_start_ && (!was_slow_start || now_ns - slow_start_since_ns_ >= WindowNs(ceiling_))) {
    slow_start_since_ns_ = now_ns;  // a first window again, after a pause in the traffic
  }
  if (probe_failed_) {
    // The platform's limit is between the level before the probe and the probe's: the next
    // probes halve that gap (bisection) while it is wider than the additive step, at the
    // usual pace; within the step, each failure doubles the windows until the next probe.
    failed_level_ = before_;
    limit_ = last_good_;
    step_ = std::max(AdditiveStep(), HalfGap());
    windows_per_increase_ =
        HalfGap() > AdditiveStep() ? 1 : std::min(64, windows_per_increase_ * 2);
  } else {
    // A level that failed before failed again (a burst hid it for a window): probe it half as
    // often, as after a failed probe; a new level: probe at once. A decrease within a window
    // of the one before is the same fall of the platform's limit followed down, not a failure
    // of its own.
    const bool again = failed_level_ > 0 && before_ <= failed_level_ &&
                       now_ns - last_decrease_ns_ >= WindowNs(ceiling_);
    last_decrease_ns_ = now_ns;
    windows_per_increase_ = again ? std::min(64, windows_per_increase_ * 2) : 1;
    // The level that drew the 429 bounds the probes back up (bisection, Refine), unless slow
    // start climbs from a first window's floor.
    failed_level_ = slow_start_ ? 0 : before_;
    Refine();
    if (slow_start_) {
      slow_start_floor_ = limit_;
    }
  }
  probing_ = false;
  successes_ = 0;
  windows_ = 0;
  increases_ = 0;
  ++throttles_;
  return true;
}

void AdaptivePace::Refine() {
  if (probe_failed_ || adopted_hold_) {
    return;
  }
  const double share = static_cast<double>(cohort_ok_ + 1) /
                       static_cast<double>(std::max<int64_t>(1, cohort_ok_ + cohort_throttled_));
  const double decrease = std::clamp(options_.decrease, 0.0, 1.0);
  int64_t lowered = 0;
  if (recent_.known()) {
    // What the platform let through in the last window, at most a decrease from the old limit;
    // nothing delivered (a single data point): the decrease alone. A partial window: what got
    // through so far, the floor slow start climbs from.
    const auto cap = static_cast<int64_t>(std::floor(static_cast<double>(before_) * decrease));
    if (recent_.delivered <= 0) {
      lowered = cap;
    } else {
      // A whole window's deliveries at a pace above the platform's are its rate (a bucket's
      // burst at most on top): the new limit, when that is more than the decrease would leave.
      //
      // A window that sent under 3/4 of the level (the key waited on a hold, a canary or a
      // park for part of it) did not press the platform: its deliveries are only a floor, and
      // the limit falls by the decrease at most. Taken as the rate, a window spent mostly
      // waiting had set a 476/s bucket's limit to 85.
      const bool pressed = recent_.sent * 4 >= before_ * 3 ||
                           last_hold_end_ns_ <= last_decrease_ns_ - WindowNs(ceiling_);
      if (slow_start_) {
        lowered = recent_.delivered;
      } else if (!pressed) {
        lowered = std::max(cap, recent_.delivered);
      } else {
        lowered =
            std::max(std::min(cap, recent_.delivered), std::min(before_ - 1, recent_.delivered));
      }
    }
  } else {
    const double factor = std::min(decrease, share);
    lowered = static_cast<int64_t>(std::floor(static_cast<double>(before_) * factor));
  }
  limit_ = std::min(before_, std::max(std::max<int64_t>(1, options_.min_limit), lowered));
  step_ = std::max(AdditiveStep(), HalfGap());
}

int64_t AdaptivePace::SlowStartStep() const {
  return std::min(ceiling_.limit,
                  limit_ * (limit_ < kSlowStartLowLevel ? kSlowStartLowFactor : kSlowStartFactor));
}

int64_t AdaptivePace::AdditiveStep() const {
  return std::max<int64_t>(1, limit_ * options_.increase_percent / 100);
}

bool AdaptivePace::NearFailedLevel() const {
  // A far failed level (a configured guess, a cohort that mostly failed) may be far above the
  // platform's limit: it is approached additively, not by halving the gap.
  return failed_level_ > limit_ && failed_level_ <= 2 * limit_;
}

int64_t AdaptivePace::HalfGap() const {
  return NearFailedLevel() ? (failed_level_ - limit_) / 2 : 0;
}

Millis AdaptivePace::Park(Millis throttle_wait, uint64_t draw, int64_t now_ns) {
  const int64_t cap = std::max<int64_t>(1, options_.max_park.count());
  const int64_t window = std::max<int64_t>(1, ceiling_.scale_ms);
  if (probe_failed_) {
    // The level before the probe held: wait one of its emission intervals, and hold off the
    // failed probe's other 429s for a window, while canaries look for room (WantsCanary). A
    // doubling that failed may have spent the platform's window early: the first canary waits
    // a first step, not one emission interval.
    const Millis park(std::clamp<int64_t>(doubling_failed_ ? CeilMillis(FirstGateStepNs()).count()
                                                           : window / std::max<int64_t>(1, limit_),
                                          1, cap));
    hold_until_ns_ = now_ns + Nanos(std::max(park, Millis(window))).count();
    park_until_ns_ = now_ns + Nanos(park).count();
    CloseGate(park_until_ns_);
    return park;
  }
  int64_t base = throttle_wait.count();
  if (recent_.known()) {
    // A first window's 429 taught only a floor, which slow start climbs from: a quarter of a
    // window. Else the counted window taught the rate, and what the platform still holds of
    // the old pace drains in the part of a window the decrease took away: a sliding log
    // forgets the old pace's requests at that pace, a bucket refills at once, a fixed window
    // at its end (the 429s until then are the hold's). At least one emission interval at the
    // new limit. A whole window each time had stalled a bucket of burst 1 for a second on
    // every 429 its jitter drew.
    // In 128 bits: a window of up to a year in ms times a limit of up to 1e9 overflows 64.
    const auto kept = static_cast<int64_t>(static_cast<__int128>(window) * limit_ /
                                           std::max<int64_t>(1, before_));
    const int64_t drain =
        std::max(window / std::max<int64_t>(1, limit_), window - std::min(window, kept));
    base = std::min(base, slow_start_ ? std::max<int64_t>(1, window / 4) : drain);
  }
  int64_t full = std::clamp<int64_t>(base, 1, cap);
  // Consecutive 429s double the park when nothing better is known. A counted window that
  // delivered something read the platform's rate, and the park is what the decrease took away:
  // doubled as well, the third decrease that follows a fall of the platform's limit down (a
  // window at a time) parked 2.4 s, and LINE's drop from 20/s to 5/s took 3.7-4.7 s to follow
  // over loopback instead of about 2.
  const bool rate_read = recent_.known() && !slow_start_ && recent_.delivered > 0;
  for (int i = 1; i < throttles_ && full < cap && !rate_read; ++i) {
    full = std::min(cap, full * 2);
  }
  const int64_t jitter = static_cast<int64_t>(draw % static_cast<uint64_t>(full / 2 + 1));
  Millis park(std::min(cap, full + jitter));
  if (slow_start_ && recent_.known()) {
    // A first window's 429s say only that its count is spent. A window after the first of
    // them the count is back whatever the platform's shape (a fixed window or a log of that
    // length has let its first requests go; a bucket that refills slower than its floor in a
    // window shows as a whole window's 429s, counted as a rate): the park that doubles with
    // each 429 ends there at the latest.
    const int64_t left_ns = slow_start_since_ns_ + WindowNs(ceiling_) - now_ns;
    if (left_ns > 0) {
      park = std::min(park, CeilMillis(left_ns));
    }
  }
  hold_until_ns_ = now_ns + Nanos(park).count();
  park_until_ns_ = hold_until_ns_;
  gate_ = Gate::kNone;  // the hold is the park: its 429s go when it ends
  canary_out_ = false;
  return park;
}

void AdaptivePace::CloseGate(int64_t until_ns) {
  gate_ = Gate::kClosed;
  canary_out_ = false;
  gate_until_ns_ = until_ns;
  gate_step_ns_ = 0;
}

int64_t AdaptivePace::FirstGateStepNs() const {
  return std::max<int64_t>(1, std::max(WindowNs(ceiling_) / kGateFirstShare,
                                       WindowNs(ceiling_) / std::max<int64_t>(1, limit_)));
}

void AdaptivePace::SetCanary(uint32_t dest, uint64_t sequence, int64_t now_ns) {
  canary_out_ = true;
  canary_dest_ = dest;
  canary_sequence_ = sequence;
  canary_sent_ns_ = now_ns;
  canary_until_ns_ = CanaryParkUntil(now_ns);
}

int64_t AdaptivePace::GateMostNs() const {
  return std::max<int64_t>(
      1, std::min(WindowNs(ceiling_) / kGateMostShare, Nanos(options_.max_park).count()));
}

int64_t AdaptivePace::CanaryParkUntil(int64_t now_ns) const {
  const int64_t wait =
      std::min(std::max(FirstGateStepNs(), 2 * canary_round_trip_ns_), GateMostNs());
  return std::min(hold_until_ns_, now_ns + wait);
}

void AdaptivePace::CanaryDelivered(int64_t now_ns) {
  canary_out_ = false;
  canary_round_trip_ns_ = std::max<int64_t>(0, now_ns - canary_sent_ns_);
  gate_ = Gate::kOpen;
  gate_step_ns_ = 0;  // a refusal after this one found room starts the steps over
}

int64_t AdaptivePace::CanaryRefused(int64_t now_ns) {
  if (canary_out_) {
    canary_round_trip_ns_ = std::max<int64_t>(0, now_ns - canary_sent_ns_);
  }
  canary_out_ = false;
  gate_ = Gate::kClosed;
  gate_step_ns_ =
      std::min(gate_step_ns_ == 0 ? FirstGateStepNs() : 2 * gate_step_ns_, GateMostNs());
  gate_until_ns_ = std::min(hold_until_ns_, now_ns + gate_step_ns_);
  return gate_until_ns_;
}

int64_t AdaptivePace::HeldOffUntil(int64_t now_ns) const {
  switch (gate_) {
    case Gate::kClosed:
      return std::min(hold_until_ns_, std::max(now_ns, gate_until_ns_));
    case Gate::kOpen:
      return now_ns;
    case Gate::kNone:
      break;
  }
  return hold_until_ns_;
}

bool AdaptivePace::MeasureDone(int64_t now_ns) const {
  const int64_t least = MeasureLeastNs(ceiling_);
  const int64_t span = now_ns - measure_start_ns_;
  return (span >= least && measure_ok_ >= kMeasureDeliveries) || span >= 2 * least;
}

void AdaptivePace::EndMeasure(int64_t now_ns) {
  measuring_ = false;
  probing_ = false;
  slow_start_ = false;
  successes_ = 0;
  windows_ = 0;
  increases_ = 0;
  // The measured level failed: the probes from the estimate bisect toward it, as after any
  // failed probe (Park: one emission interval, 429s held off for a window behind canaries).
  probe_failed_ = true;
  failed_level_ = before_;
  const int64_t least = std::max<int64_t>(1, options_.min_limit);
  if (measure_ok_ == 0) {
    // Nothing got through: a window's count is spent, and no rate can be read. The last whole
    // window's deliveries are that count; canaries look for the window's end (Park).
    doubling_failed_ = true;
    limit_ = last_good_;
    if (recent_.known() && !recent_.partial && recent_.delivered > 0) {
      // A window counted across two of a fixed window's can hold up to twice its count: the
      // count is at least half of it. The first window's floor is one whole count when a
      // window's count was spent then (it may be only a bucket's burst: held to that half).
      const int64_t count =
          slow_start_floor_ > 0
              ? std::clamp(slow_start_floor_, (recent_.delivered + 1) / 2, recent_.delivered)
              : recent_.delivered;
      limit_ = std::clamp(count, least, std::max(least, last_good_));
    }
  } else {
    // Pressed above the platform's rate, what it lets through after its first refusal is its
    // rate, whatever its burst: a bucket's refill, a log's or a window's share.
    doubling_failed_ = false;
    // At most half a window: a response after a pause in the traffic ends the measurement, and
    // the pause is no measure of the platform's rate.
    const int64_t most = 2 * MeasureLeastNs(ceiling_);
    const double span = static_cast<double>(
        std::clamp<int64_t>(now_ns - measure_start_ns_, 1, std::max<int64_t>(1, most)));
    double rate =
        std::min(static_cast<double>(before_),
                 static_cast<double>(measure_ok_) * static_cast<double>(WindowNs(ceiling_)) / span);
    if (span < static_cast<double>(WindowNs(ceiling_) / kMeasureShortShare)) {
      // A fast platform's 4th 429 comes within milliseconds, and a few deliveries over a span
      // that short count its burst and the answers' reordering (a 380/s window read 743 from
      // 2 deliveries in 2 ms). The share the level got through is steadier there: the rate is
      // at most the level times that share.
      rate = std::min(rate, static_cast<double>(before_) * static_cast<double>(measure_ok_) /
                                static_cast<double>(measure_ok_ + measure_throttled_ + 1));
    }
    // The floor is 3/4 of a level that held: the one before the step, but no more than the
    // first window's count. The step's level before may have passed its third of a window
    // only because a sliding log's history was still empty (880/s over a 445/s log).
    const int64_t held =
        slow_start_floor_ > 0 ? std::min(last_good_, slow_start_floor_) : last_good_;
    const int64_t floor = std::max(least, held * kMeasureFloorPercent / 100);
    limit_ = std::max(
        least, std::clamp(static_cast<int64_t>(std::floor(rate)), std::min(floor, before_ - 1),
                          std::max<int64_t>(1, before_ - 1)));
  }
  last_good_ = limit_;
  step_ = std::max(AdditiveStep(), HalfGap());
  windows_per_increase_ = 1;
  hold_until_ns_ = now_ns + WindowNs(ceiling_);
  // Ended by a delivery there is no park, and the first canary may go at once; ended by a 429,
  // Park() sets when.
  CloseGate(now_ns);
}

bool AdaptivePace::OnSuccess(int64_t now_ns, const RecentWindow& recent) {
  if (measuring_) {
    ++measure_ok_;
    if (!MeasureDone(now_ns)) {
      return false;
    }
    EndMeasure(now_ns);
    return true;
  }
  // After a failed probe the limit is back at a level that held: what it delivers during the
  // hold counts toward its next window (the hold only keeps the probe's own 429s from
  // lowering it further).
  if (now_ns < hold_until_ns_ && !(probe_failed_ && !adopted_hold_)) {
    ++cohort_ok_;
    if (recent.known()) {
      recent_ = recent;
    }
    const int64_t old = limit_;
    Refine();
    return limit_ != old;
  }
  throttles_ = 0;
  if (at_ceiling()) {
    return false;
  }
  ++successes_;
  if (slow_start_ && successes_ >= std::max<int64_t>(1, limit_ / kSlowStartShare)) {
    // Slow start grows once a third of a window at the level passed without a 429. The first
    // step that fails is measured (EndMeasure); a burst may hide an overshoot longer, and
    // such a step fails later as a probe (back to this level) or, after a whole window, as a
    // decrease to what the window delivered.
    successes_ = 0;
    last_good_ = limit_;
    probing_ = true;
    limit_ = SlowStartStep();
    return true;
  }
  if (successes_ < limit_) {
    return false;
  }
  successes_ = 0;
  probing_ = false;  // a whole window passed at this level
  if (++windows_ < windows_per_increase_) {
    return false;
  }
  windows_ = 0;
  last_good_ = limit_;
  probing_ = true;
  if (slow_start_) {
    limit_ = SlowStartStep();
    return true;
  }
  limit_ = std::min(ceiling_.limit, limit_ + step_);
  if (NearFailedLevel()) {
    // Bisecting below a failed level: the next step halves what is left of the gap.
    step_ = std::max(AdditiveStep(), HalfGap());
    return true;
  }
  failed_level_ = 0;
  if (++increases_ % std::max(1, options_.increases_per_doubling) == 0) {
    step_ = std::min(step_ * 2, ceiling_.limit);
  }
  return true;
}

Budget AdaptivePace::Current() const {
  return Budget{limit_, ceiling_.scale_ms, std::min(ceiling_.burst, limit_)};
}

void AdaptivePace::Adopt(int64_t limit, bool probing, int64_t hold_until_ns, int64_t now_ns) {
  const int64_t adopted = std::clamp(
      limit, std::min(std::max<int64_t>(1, options_.min_limit), ceiling_.limit), ceiling_.limit);
  const bool held_here = now_ns < hold_until_ns_;
  if (!held_here) {
    gate_ = Gate::kNone;  // another node's hold: its 429s here wait for its end
    canary_out_ = false;
  }
  if (hold_until_ns > hold_until_ns_) {
    hold_until_ns_ = hold_until_ns;
  }
  if (held_here && adopted > limit_) {
    // A decrease is on here: a higher limit is a node that had not seen it yet (or counted
    // fewer refusals). The lower one stands until the hold ends.
    adopted_hold_ = true;
    return;
  }
  if (now_ns < hold_until_ns_) {
    adopted_hold_ = true;
  }
  if (probing && adopted > limit_) {
    last_good_ = limit_;  // the level the other node stepped up from
  }
  probing_ = probing && (adopted > limit_ || probing_);
  if (!held_here) {
    probe_failed_ = false;  // a failed probe of this node's own keeps its hold's rules
  }
  slow_start_ = false;
  measuring_ = false;  // another node's estimate replaces this one's
  limit_ = adopted;
  before_ = limit_;
  step_ = AdditiveStep();
  successes_ = 0;
  windows_ = 0;
}

void AdaptivePace::SetCeiling(const Budget& ceiling) {
  ceiling_ = ceiling;
  ceiling_learned_ = false;
  limit_ = std::min(limit_, ceiling.limit);
  before_ = std::min(before_, ceiling.limit);
}

}  // namespace egress::pacing
