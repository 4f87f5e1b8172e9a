#pragma once

#include <array>
#include <cstdint>
#include <optional>

namespace egress::service {

// How fast a backlog is leaving, as seen: the deliveries that left it (delivered or dead) in
// one-second slots over the last kSlots seconds, each slot with the time of its first. The rate
// is read over the shortest span back from now (at least the current slot and the one before)
// that holds `enough` deliveries, else over every slot, as (deliveries - 1) / (last - first): a
// paced stream reads as its pace whatever its phase against the slots, a fast backlog's rate
// follows a change within a second or two, and a slow one's (a Slack channel's 1/s) is still
// averaged over seconds. A stream that stopped for more than twice its interval reads slower
// the longer it stays stopped. 48 bytes; one per destination and one per (tenant, platform).
// Not thread-safe.
class DrainRate {
 public:
  static constexpr int kSlots = 6;
  static constexpr int64_t kSlotMs = 1'000;
  // What PerSecond reads a rate over: kEnough for a group of destinations (bursts of several
  // destinations at once, Discord's route windows, average out), kEnoughForOne for one
  // destination (its share of a scope it shares with others comes slower: a LINE user's 2/s is
  // read over 3 s, not 6).
  static constexpr int64_t kEnough = 12;
  static constexpr int64_t kEnoughForOne = 6;

  // `n` deliveries left the backlog at `now_ms` (wall or steady: one clock per instance; times
  // that go back count as the last one's).
  void Count(int64_t now_ms, int64_t n = 1);
  // Deliveries per second lately; nullopt when none left within the last kSlots seconds, or
  // only one since they started leaving again.
  std::optional<double> PerSecond(int64_t now_ms, int64_t enough = kEnough) const;

 private:
  void Roll(int64_t now_ms);

  int64_t slot_ms_ = 0;  // when the newest slot (counts_[0]) started
  int64_t last_ms_ = 0;  // the last delivery counted
  std::array<int32_t, kSlots> counts_{};
  std::array<uint16_t, kSlots> first_{};  // each slot's first delivery, ms into the slot
};

// What a drain estimate takes (docs/api.md, "Drain ETA").
struct DrainInputs {
  int64_t backlog = 0;  // deliveries not yet finished: queued, deferred, in flight
  // Seen (DrainRate); nullopt without history.
  std::optional<double> seen_per_s;
  // The most the scheduler lets through: the slowest budget of the path (its learned or
  // lowered limit included), in deliveries per second; nullopt when not known.
  std::optional<double> foreseen_per_s;
  // Nothing leaves before this (a park, a back-off, a deferred retry's time); 0: now.
  int64_t not_before_ms = 0;
  // An operator holds it (a pause, a disabled destination): no estimate.
  bool held = false;
  // When a group that holds this backlog would be done (its tenant's on its platform, Unix ms):
  // this backlog is done by then too. nullopt: not known.
  std::optional<int64_t> group_eta_ms;
};

// When the backlog would be done (Unix ms): from max(now, not_before) at the pace seen, held to
// the pace foreseen (a limit lowered since shows at once; a raised one only as it is seen), or
// at the foreseen pace without history; no later than its group's estimate (nor earlier than
// not_before). `now_ms` when there is no backlog; nullopt when held or no pace is known.
std::optional<int64_t> DrainEtaMs(const DrainInputs& in, int64_t now_ms);

}  // namespace egress::service
