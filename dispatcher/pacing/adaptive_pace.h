#pragma once

#include <cstdint>

#include "dispatcher/base/clock.h"
#include "dispatcher/pacing/budget.h"
#include "dispatcher/pacing/gcra_meter.h"

namespace egress::pacing {

// How the pace of a key adapts to 429s that carry no usable headers (LINE always; any webhook
// that sends a bare 429). See docs/pacing.md "Adaptive pace".
struct AdaptivePaceOptions {
  // The limit is multiplied by at most this on a header-less 429; by less when most of the
  // requests already in flight come back 429 too (see AdaptivePace). Default: 0.5.
  double decrease = 0.5;
  // The lowest limit, in units per the budget's scale. Default: 1.
  int64_t min_limit = 1;
  // The additive step per window of successes, in percent of the limit the last decrease set
  // (at least 1 unit). Default: 10 (after a halving, 5% of the limit before it).
  int64_t increase_percent = 10;
  // After this many increases without a 429 the step doubles, so a limit that went away is
  // found again in tens of windows, not hundreds. Default: 10.
  int increases_per_doubling = 10;
  // The park after a header-less 429 grows with consecutive 429s: throttle_wait * 2^(n-1) plus
  // up to half of that again at random, at most this. Default: 60 s.
  Millis max_park{60'000};
};

// What the Scheduler counted on a key over its most recent window (the budget's scale): requests
// sent and deliveries. `sent` < 0 when the key is not counted (nothing better is known).
// `partial`: the key's traffic began less than a window ago, so the counts are what got through
// so far, a floor of the platform's rate rather than a measure of it.
struct RecentWindow {
  int64_t sent = -1;
  int64_t delivered = 0;
  bool partial = false;
  bool known() const { return sent >= 0; }
};

// The AIMD state of one scope key whose budget was lowered by header-less 429s: its current
// limit, the ceiling it probes back up to, and the backoff of consecutive 429s. Pure logic over
// times passed in. Not thread-safe: runs on the dispatcher loop.
//
// A 429 outside a park lowers the limit and parks the key. Responses that arrive during the park
// belong to requests sent before it, at the old limit (the cohort): they do not decrease again,
// but their share of successes refines the decrease: the limit becomes the old one times
// min(decrease, (successes + 1) / (successes + 429s)), so 40 requests in flight of which 38 come
// back 429 take the limit to a 20th at once instead of costing five halvings.
//
// When the key's recent window is counted (RecentWindow), the decrease is derived from what was
// actually sent and delivered, not from the configured ceiling: the limit becomes the deliveries
// of the last window (what the platform let through), at most `decrease` times the old limit; with
// no delivery in the window, `decrease` times the old limit. A LINE channel configured at 2,000/s
// whose real limit is 20/s is then found in one step instead of seven halvings. Its park is the
// part of a window the decrease took away (window * (1 - new / old), at least one emission
// interval at the new limit, not longer than throttle_wait): what the platform still counts of
// the old pace has drained by then.
//
// When the 429 comes before the key's traffic has filled a window (a platform metering with a
// small burst refuses the second request of a fresh stream), the deliveries so far are only a
// floor, a burst rather than a rate: the limit becomes that floor and grows (slow start: x4
// below 8, else x2) each time a third of a window's worth of it is delivered without a 429.
// The first window's 429s park the key for a quarter of a window, doubling with each, but never
// past a window after the first of them (by then the spent count of a window as long as the
// budget's scale is back, whatever the shape). Its
// first step that fails is measured rather than undone: the key keeps sending at that level
// for a quarter of a window (at least 8 deliveries, at most 4 more 429s; the span counted at
// most half a window, so a pause in the traffic does not read as a slow rate), and what the
// platform lets through per window while pressed is its rate, the new limit (no less than 3/4 of
// the level before the step). Probes then bisect toward the failed level as below. When the first
// 429 and three more let nothing through, a window's count is spent: the limit becomes the last
// whole window's deliveries held to the first window's floor, but not below half of them (our
// window straddles two of a fixed window's and may count up to twice its count; the floor is one
// whole count, unless it was only a bucket's burst), and canaries look for the window's end
// (WantsCanary). A measurement shorter than a 16th of a window is held to the level times the
// share of its requests that got through, and its floor is 3/4 of the level before the step but
// of the first window's count at most. Another node's
// update (Adopt) ends a measurement without a result: in a cluster a peer usually fails the same
// step first.
//
// A 429 within the first window after an increase means that probe went too far: the limit
// goes back to the level before it (no halving), the key is parked for one emission interval of
// that level only, 429s within the next window belong to the failed probe (they wait for its
// canary, WantsCanary), and the next probe waits twice as many windows (at most 64), so a steady
// real limit costs at most one 429 per probe, and fewer and fewer probes. A 429 at a level that
// had already passed a whole window means the real limit fell: multiplicative decrease, from
// the window's deliveries unless the window sent under 3/4 of the level after a hold of ours
// (then they are a floor: the decrease alone, at most).
class AdaptivePace {
 public:
  // `ceiling` is the budget the key had before its first decrease (configured, an operator
  // override or learned from headers); the pace never probes above it.
  AdaptivePace(const AdaptivePaceOptions& options, const Budget& ceiling, bool ceiling_learned);

  // A header-less 429 that arrived at `now_ns`. While the key is still parked by the previous
  // decrease, counts it in that decrease's cohort (the limit may fall further) and returns false;
  // else lowers the limit, counts one more consecutive 429 and returns true (then call Park()).
  // `recent` is the key's last window including this response, when counted.
  bool OnThrottle(int64_t now_ns, const RecentWindow& recent = {});
  // After OnThrottle() returned true: the park to apply (growing, jittered by `draw`, any
  // 64-bit value), and from then on 429s arriving before the hold (the park, and at least a
  // window after a failed probe) are held off.
  Millis Park(Millis throttle_wait, uint64_t draw, int64_t now_ns);
  // A delivered request that arrived at `now_ns`: during a park, counted in the cohort; after
  // it, one window of successes (the current limit's worth) adds one step. Returns true when
  // the limit changed.
  bool OnSuccess(int64_t now_ns, const RecentWindow& recent = {});

  // The budget the key has now: the ceiling's scale and burst (at most the limit) with the
  // current limit.
  Budget Current() const;
  const Budget& ceiling() const { return ceiling_; }
  bool ceiling_learned() const { return ceiling_learned_; }
  bool at_ceiling() const { return limit_ >= ceiling_.limit; }
  // A step up is being tried: no whole window has passed at the current limit since it rose.
  bool probing() const { return probing_; }
  // The deadline before which a 429 is held off.
  int64_t hold_until_ns() const { return hold_until_ns_; }
  // When the last park ends: the request whose 429 set it may go again then (a failed probe
  // holds the others' 429s off for a window, but its park is one emission interval, a failed
  // doubling's a first gate step).
  int64_t park_until_ns() const { return park_until_ns_; }
  // Slow start's failed step is being pressed on to read the platform's rate (EndMeasure).
  bool measuring() const { return measuring_; }

  // The canary of a failed step's hold. A failed probe or measurement goes back to a level
  // that held and holds the step's other 429s off for a window, but the platform may have
  // room again long before that (a bucket or a log at once, a fixed window at its end). So
  // when the park ends one request goes alone (the canary) and the key is parked behind it for
  // about its answer's time (CanaryParkUntil; the store's park is only ever extended, never
  // lifted: on a shared store another park may be on the same key): delivered, the gate is
  // open and everything goes at the level (until a held-off 429 closes it again); refused, the
  // next canary waits a step that doubles (max(a 32nd of a window, an emission interval) first,
  // a quarter at most). Held-off 429s wait for the gate, not
  // for the hold: waiting out the hold had stalled a channel of ten users for a whole window
  // on every failed probe. One 429 per step, where releasing everything at the level drew a
  // round trip's worth each time (up to 385 in a run).
  //
  // Whether a request dispatched at `now_ns` is to be the canary (then call SetCanary and
  // park the key until CanaryParkUntil()).
  // A canary whose park ended without an answer (a long round trip, or one never answered)
  // is replaced: the key sends one request per canary park while it waits.
  bool WantsCanary(int64_t now_ns) const {
    return gate_ == Gate::kClosed && (!canary_out_ || now_ns >= canary_until_ns_) &&
           now_ns >= gate_until_ns_ && now_ns < hold_until_ns_;
  }
  // `dest` and `sequence` name the canary's request, opaque here; it went at `now_ns`.
  void SetCanary(uint32_t dest, uint64_t sequence, int64_t now_ns);
  // The key waits behind the canary until then: twice the last canary's round trip, at least
  // the first step, at most a quarter of a window, max_park and the hold. If its answer comes
  // later, the next request is another canary (its answer then still opens or closes the
  // gate).
  int64_t CanaryParkUntil(int64_t now_ns) const;
  // Whether a response is the canary's.
  bool IsCanary(uint32_t dest, uint64_t sequence) const {
    return canary_out_ && dest == canary_dest_ && sequence == canary_sequence_;
  }
  // The canary was delivered at `now_ns`: the gate is open until the next failed step.
  void CanaryDelivered(int64_t now_ns);
  // The canary was refused at `now_ns`, or with the gate open a 429 was held off (the room the
  // canary found is spent again: a fall of the platform's limit, or a fixed window's count):
  // the gate closes, and this returns when the next canary may go (the key parks until then).
  int64_t CanaryRefused(int64_t now_ns);
  bool gate_open() const { return gate_ == Gate::kOpen; }
  // The canary's answer said nothing about the rate (a 5xx, a timeout, a 429 with headers that
  // pace the key themselves): the next request is the canary.
  void CanaryLost() { canary_out_ = false; }
  // When a 429 that OnThrottle() held off may go again: with the gate closed, at the gate (the
  // key's park behind a canary holds it further); open, at once (the Scheduler takes such a 429
  // as a refusal first: CanaryRefused); with no gate (another node's
  // hold, a decrease's cohort), when the hold ends.
  int64_t HeldOffUntil(int64_t now_ns) const;

  // Another node's pace for this key (Scheduler::ApplyLearned): its limit (held to
  // [min_limit, ceiling]), whether it is probing, and until when it holds 429s off (its park,
  // which the shared store applies to this node as well). 429s and successes here during that
  // hold belong to the other node's decrease and change nothing; after it, windows count afresh
  // at the adopted level, and a 429 within the first one after an adopted step up fails that
  // probe (back to the level before it).
  // A hold of this node's own that is still on stays, and is then the other node's as well: its
  // cohort is not refined here either, so the two nodes never trade estimates of one decrease;
  // and a higher limit than this node's during it changes nothing (the lower estimate stands).
  void Adopt(int64_t limit, bool probing, int64_t hold_until_ns, int64_t now_ns);
  // A new ceiling (the operator changed the configured budget); the limit is clamped to it.
  void SetCeiling(const Budget& ceiling);

 private:
  AdaptivePaceOptions options_;
  Budget ceiling_;
  bool ceiling_learned_ = false;
  // The cohort estimate: the limit before the last decrease and the responses since.
  void Refine();
  // increase_percent of the limit, at least 1.
  int64_t AdditiveStep() const;
  // Slow start's next level: x4 below 8, else x2, at most the ceiling.
  int64_t SlowStartStep() const;
  // The measurement has run long enough; EndMeasure sets the limit it found.
  bool MeasureDone(int64_t now_ns) const;
  void EndMeasure(int64_t now_ns);
  // A failed step's hold begins: the first canary goes at `until_ns`.
  void CloseGate(int64_t until_ns);
  // A refused canary's first wait: max(a 32nd of a window, an emission interval at the limit).
  int64_t FirstGateStepNs() const;
  // The longest wait of the gate: a quarter of a window, at most max_park.
  int64_t GateMostNs() const;
  // failed_level_ is above the limit and at most twice it: the probes bisect the gap.
  bool NearFailedLevel() const;
  // Half the gap up to failed_level_ when it is near, else 0.
  int64_t HalfGap() const;

  int64_t limit_;
  int64_t before_ = 0;
  RecentWindow recent_;  // at the last 429 or cohort response
  int64_t cohort_ok_ = 0;
  int64_t cohort_throttled_ = 0;
  int64_t step_ = 1;
  int64_t successes_ = 0;  // in the current window
  int increases_ = 0;
  int64_t last_good_ = 0;     // the level before the last increase
  int64_t failed_level_ = 0;  // the last probe that failed, while the limit bisects below it
  bool probing_ = false;      // no whole window has passed since the last increase
  bool probe_failed_ = false;
  bool slow_start_ = false;          // the last decrease came from a partial window: grow per third
                                     // of a window
  int64_t slow_start_since_ns_ = 0;  // the 429 that began slow start
  int64_t slow_start_floor_ = 0;     // what the first window delivered before it
  bool doubling_failed_ = false;
  bool adopted_hold_ = false;  // the hold is another node's: its cohort is not refined here
  int windows_ = 0;            // whole windows since the last increase
  int windows_per_increase_ = 1;
  int throttles_ = 0;  // consecutive 429s without a success in between
  int64_t hold_until_ns_ = INT64_MIN;
  int64_t park_until_ns_ = INT64_MIN;
  // The canary's gate (WantsCanary): none outside a failed step's hold.
  enum class Gate : uint8_t { kNone, kClosed, kOpen };
  Gate gate_ = Gate::kNone;
  bool canary_out_ = false;
  uint32_t canary_dest_ = 0;
  uint64_t canary_sequence_ = 0;
  int64_t gate_until_ns_ = INT64_MIN;  // the next canary goes no sooner
  int64_t gate_step_ns_ = 0;           // the last wait after a refused canary, 0 for none yet
  int64_t canary_sent_ns_ = 0;
  int64_t canary_until_ns_ = 0;       // its park's end: after it, another request is the canary
  int64_t canary_round_trip_ns_ = 0;  // the last answered canary's, 0 for none yet
  // At the last decrease: when the hold before it ended, its own or another node's (Refine: a
  // window that waited on a hold is no measure of the platform's rate).
  int64_t last_hold_end_ns_ = INT64_MIN;
  int64_t last_decrease_ns_ = INT64_MIN / 2;  // when OnThrottle last lowered the limit
  // The measurement of slow start's failed step: once per key (measured_), from its first 429.
  bool measuring_ = false;
  bool measured_ = false;
  int64_t measure_start_ns_ = 0;
  int64_t measure_ok_ = 0;
  int64_t measure_throttled_ = 0;  // 429s after the first
};

}  // namespace egress::pacing
