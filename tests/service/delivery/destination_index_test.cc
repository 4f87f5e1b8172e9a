#include "dispatcher/service/delivery/destination_index.h"

#include <deque>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dispatcher/service/api/destination_cursor.h"

namespace egress::service {
namespace {

// The index keeps pointers: the keys and tenants live in a deque (stable addresses), as the
// DeliveryLoop's map nodes hold them.
struct Dest {
  std::string key;
  std::string tenant;
  uint64_t hash = 0;
  int64_t deferral_ms = 0;
  bool present = false;
};

class DestinationIndexTest : public ::testing::Test {
 protected:
  Dest& Add(const std::string& tenant, const std::string& key) {
    Dest& d = dests_.emplace_back(Dest{.key = tenant + "/" + key, .tenant = tenant});
    d.hash = index_.Add(&d.key, &d.tenant);
    d.present = true;
    return d;
  }
  void Remove(Dest& d) {
    index_.MoveDeferral(&d.key, &d.tenant, d.hash, d.deferral_ms, 0);
    index_.Remove(&d.key, &d.tenant, d.hash);
    d.present = false;
  }
  void Defer(Dest& d, int64_t ms) {
    index_.MoveDeferral(&d.key, &d.tenant, d.hash, d.deferral_ms, ms);
    d.deferral_ms = ms;
  }
  // One page of at most `limit`: the keys, and where to go on.
  std::vector<std::string> Page(bool by_deferral, const std::string& tenant,
                                std::optional<DestinationPosition>& at, size_t limit) {
    std::vector<std::string> keys;
    at = index_.Walk(by_deferral, tenant, at, limit, [&](const std::string& key, auto&) {
      keys.push_back(key);
      return true;
    });
    return keys;
  }

  DestinationIndex index_;
  std::deque<Dest> dests_;
};

// Verifies the walk by key (issue #35): every destination present all along is listed exactly
// once, none twice, while others come and go between pages, over many seeds.
TEST_F(DestinationIndexTest, WalkListsEachStayingDestinationOnce) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE(seed);
    dests_.clear();
    index_ = DestinationIndex();
    std::mt19937_64 rng(seed);
    std::vector<Dest*> staying;
    for (int i = 0; i < 500; ++i) {
      staying.push_back(&Add("t" + std::to_string(i % 7), "d" + std::to_string(i)));
    }
    std::vector<Dest*> coming;
    std::map<std::string, int> seen;
    std::optional<DestinationPosition> at;
    int pages = 0;
    do {
      for (const std::string& key : Page(false, "", at, 1 + rng() % 40)) {
        ++seen[key];
      }
      // Between pages: some come, some of those that came go.
      for (int j = 0; j < 5; ++j) {
        coming.push_back(&Add("t" + std::to_string(rng() % 9), "n" + std::to_string(rng())));
      }
      for (Dest* d : coming) {
        if (d->present && rng() % 3 == 0) {
          Remove(*d);
        }
      }
      ++pages;
    } while (at && pages < 1000);
    EXPECT_LT(pages, 1000);
    for (Dest* d : staying) {
      EXPECT_EQ(seen[d->key], 1) << d->key;
    }
    for (const auto& [key, n] : seen) {
      EXPECT_EQ(n, 1) << key;
    }
  }
}

// Verifies a tenant's walk stays in its range (and counts it in O(1)), and the bound of steps:
// a walk stops after max_steps looked at, with where to go on.
TEST_F(DestinationIndexTest, TenantRangeAndBoundedSteps) {
  for (int i = 0; i < 30; ++i) {
    Add(i % 3 == 0 ? "acme" : "globex", "d" + std::to_string(i));
  }
  EXPECT_EQ(index_.CountOf("acme"), 10u);
  EXPECT_EQ(index_.CountOf("nobody"), 0u);
  std::optional<DestinationPosition> at;
  std::set<std::string> acme;
  do {
    for (const std::string& key : Page(false, "acme", at, 3)) {
      EXPECT_TRUE(key.starts_with("acme/")) << key;
      acme.insert(key);
    }
  } while (at);
  EXPECT_EQ(acme.size(), 10u);
  // Looking at 4 and keeping none: the walk stops at 4, with a position.
  size_t looked = 0;
  auto stop = index_.Walk(false, "", std::nullopt, 4, [&](const std::string&, auto&) {
    ++looked;
    return true;
  });
  EXPECT_EQ(looked, 4u);
  EXPECT_TRUE(stop.has_value());
}

// Verifies the order by oldest deferral: oldest first, destinations without one left out, a
// tenant's own range, and a destination that moves.
TEST_F(DestinationIndexTest, OldestDeferralFirst) {
  Dest& a = Add("acme", "a");
  Dest& b = Add("acme", "b");
  Dest& c = Add("globex", "c");
  Add("acme", "never");
  Defer(a, 300);
  Defer(b, 100);
  Defer(c, 200);
  std::optional<DestinationPosition> at;
  EXPECT_EQ(Page(true, "", at, 10), (std::vector<std::string>{"acme/b", "globex/c", "acme/a"}));
  EXPECT_FALSE(at.has_value());
  EXPECT_EQ(Page(true, "acme", at, 10), (std::vector<std::string>{"acme/b", "acme/a"}));
  Defer(b, 0);  // no longer deferred
  Defer(a, 50);
  EXPECT_EQ(Page(true, "", at, 1), (std::vector<std::string>{"acme/a"}));
  EXPECT_EQ(Page(true, "", at, 10), (std::vector<std::string>{"globex/c"}));
  Remove(c);
  at.reset();
  EXPECT_EQ(Page(true, "", at, 10), (std::vector<std::string>{"acme/a"}));
}

// Verifies the hash is keyed: two indexes (two processes) place one key differently, and one
// index places it the same each time; so a cursor, which holds a hash, says nothing of a key
// that is not already known to its index.
TEST(DestinationIndexKeyTest, HashIsKeyedPerIndex) {
  const std::string key =
      "webhook\x1f"
      "acme\x1fhooks\x1fhttps://h.example/?sig=secret";
  const std::string tenant = "acme";
  DestinationIndex a;
  DestinationIndex b;
  const uint64_t in_a = a.Add(&key, &tenant);
  a.Remove(&key, &tenant, in_a);
  EXPECT_EQ(a.Add(&key, &tenant), in_a);
  EXPECT_NE(b.Add(&key, &tenant), in_a);
  EXPECT_NE(a.epoch(), b.epoch());
}

// Verifies the cursor's text: round trip, and a typed refusal for another process (epoch), the
// other sort or text that is not one; it holds no destination.
TEST(DestinationCursorTest, RoundTripAndRefusals) {
  const DestinationPosition at{.deferral_ms = 1234, .tenant = "acme\x1f/x", .hash = 0xfeedULL};
  const std::string text = EncodeDestinationCursor(7, true, at);
  auto back = DecodeDestinationCursor(text, 7, true);
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_EQ(back->deferral_ms, 1234);
  EXPECT_EQ(back->tenant, at.tenant);
  EXPECT_EQ(back->hash, 0xfeedULL);
  for (char c : text) {
    EXPECT_TRUE(c > 0x20 && c < 0x7f) << text;
  }
  EXPECT_EQ(DecodeDestinationCursor(text, 8, true).error().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(DecodeDestinationCursor(text, 7, false).error().code(), Status::Code::kInvalidArgument);
  for (const std::string& bad : std::vector<std::string>{
           "", "d1", "d1.x.k.0.0.", "d2.0000000000000007.k.0.000000000000feed.",
           "d1.0000000000000007.k.-1.000000000000feed.",
           "d1.0000000000000007.k.0."
           "000000000000feed.zz",
           text + ".extra"}) {
    EXPECT_FALSE(DecodeDestinationCursor(bad, 7, false).has_value()) << bad;
  }
}

}  // namespace
}  // namespace egress::service
