#include "dispatcher/service/quota_book.h"

#include <gtest/gtest.h>

#include "storage/rocks_queue_store.h"
#include "tests/support/fake_clock.h"
#include "tests/support/temp_dir.h"

namespace egress::service {
namespace {

storage::NewDelivery Part(const std::string& platform, uint32_t cost) {
  storage::NewDelivery d;
  d.tenant = "acme";
  d.platform = platform;
  d.destination = platform == "line" ? "U0123456789abcdef0123456789abcdef" : "C1";
  d.credential = "bot";
  d.payload = "{}";
  d.cost = cost;
  return d;
}

class QuotaBookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    storage::StoreOptions o;
    o.path = dir_.Sub("store");
    auto opened = storage::OpenRocksQueueStore(o, ToUnixMillis(clock_.WallNow()));
    ASSERT_TRUE(opened.has_value()) << opened.error().ToString();
    store_ = std::move(*opened);
    ledger_ = std::make_unique<StoreQuotaLedger>(*store_);
    QuotaBook::Options options;
    config::TierConfig pro;
    pro.quotas["monthly"] = {.limit = 10, .window = Millis(30LL * 86'400'000)};
    pro.quotas["line_daily"] = {.limit = 4, .window = Millis(86'400'000), .platforms = {"line"}};
    options.tiers["pro"] = pro;
    options.tenant_tiers["acme"] = "pro";
    options.tenant_quotas["solo"]["hourly"] = {.limit = 1, .window = Millis(3'600'000)};
    book_ = std::make_unique<QuotaBook>(clock_, *ledger_, options);
  }

  TempDir dir_;
  FakeClock clock_;
  std::unique_ptr<storage::QueueStore> store_;
  std::unique_ptr<StoreQuotaLedger> ledger_;
  std::unique_ptr<QuotaBook> book_;
};

// Verifies tier inheritance: a tenant gets its tier's quotas, its own replace those of the same
// name (the config's, then the admin's), and going back restores the tier's.
TEST_F(QuotaBookTest, TenantQuotasOverlayTheTiers) {
  auto quotas = book_->QuotasOf("acme");
  ASSERT_EQ(quotas.size(), 2u);
  EXPECT_EQ(quotas[0].name, "line_daily");
  EXPECT_FALSE(quotas[0].own);
  EXPECT_EQ(book_->TierOf("acme"), "pro");
  EXPECT_EQ(book_->QuotasOf("solo").size(), 1u);
  EXPECT_TRUE(book_->QuotasOf("nobody").empty());
  book_->SetOwnQuotas("acme",
                      config::QuotaMap{{"monthly", {.limit = 3, .window = Millis(60'000)}}});
  quotas = book_->QuotasOf("acme");
  ASSERT_EQ(quotas.size(), 2u);
  EXPECT_EQ(quotas[1].name, "monthly");
  EXPECT_EQ(quotas[1].config.limit, 3);
  EXPECT_TRUE(quotas[1].own);
  book_->SetOwnQuotas("acme", std::nullopt);
  EXPECT_EQ(book_->QuotasOf("acme")[1].config.limit, 10);
  EXPECT_EQ(book_->Tenants(), (std::vector<std::string>{"acme", "solo"}));
}

// Verifies that ReplaceOwnQuotas sets every tenant's own quotas at once: a tenant in the map gets
// exactly those (an empty map: none of its own, over the config's), every other goes back to the
// config's and its tier's.
TEST_F(QuotaBookTest, ReplaceOwnQuotasReplacesEveryTenants) {
  book_->SetOwnQuotas("acme",
                      config::QuotaMap{{"monthly", {.limit = 3, .window = Millis(60'000)}}});
  book_->SetOwnQuotas("other",
                      config::QuotaMap{{"daily", {.limit = 7, .window = Millis(86'400'000)}}});
  book_->ReplaceOwnQuotas({{"solo", config::QuotaMap{}},
                           {"fresh", {{"hourly", {.limit = 2, .window = Millis(3'600'000)}}}}});
  auto acme = book_->QuotasOf("acme");
  ASSERT_EQ(acme.size(), 2u);
  EXPECT_EQ(acme[1].config.limit, 10);  // the tier's again
  EXPECT_FALSE(acme[1].own);
  EXPECT_TRUE(book_->QuotasOf("other").empty());
  EXPECT_TRUE(book_->QuotasOf("solo").empty());  // over the config's hourly
  auto fresh = book_->QuotasOf("fresh");
  ASSERT_EQ(fresh.size(), 1u);
  EXPECT_EQ(fresh[0].config.limit, 2);
  EXPECT_TRUE(fresh[0].own);
  book_->ReplaceOwnQuotas({});
  EXPECT_EQ(book_->QuotasOf("solo").size(), 1u);  // the config's again
  EXPECT_TRUE(book_->QuotasOf("fresh").empty());
}

// Verifies that Charge writes a charge per applying quota into each part, reserves the units
// until Release, and refuses with the first quota that would go over.
TEST_F(QuotaBookTest, ChargesReservesAndRefuses) {
  std::vector<storage::NewDelivery> parts = {Part("line", 3), Part("slack", 2)};
  QuotaBook::Reservation reserved;
  ASSERT_FALSE(book_->Charge(parts, reserved).has_value());
  ASSERT_EQ(parts[0].charges.size(), 2u);  // line_daily and monthly
  ASSERT_EQ(parts[1].charges.size(), 1u);  // monthly only
  EXPECT_EQ(parts[1].charges[0].quota, "monthly");
  EXPECT_EQ(parts[1].charges[0].units, 2);
  const auto quotas = book_->QuotasOf("acme");
  EXPECT_EQ(book_->UsageOf("acme", quotas[0]).used, 3);  // reserved, not yet stored
  EXPECT_EQ(book_->UsageOf("acme", quotas[1]).used, 5);
  // 3 + 2 more LINE units would pass monthly (10) but not line_daily (4).
  std::vector<storage::NewDelivery> more = {Part("line", 2)};
  QuotaBook::Reservation other;
  auto denied = book_->Charge(more, other);
  ASSERT_TRUE(denied.has_value());
  EXPECT_EQ(denied->quota.name, "line_daily");
  EXPECT_EQ(denied->decision.used, 3);
  EXPECT_TRUE(more[0].charges.empty());
  EXPECT_TRUE(other.empty());
  // Stored, the charges count from the store; released, the reservation no longer does.
  ASSERT_TRUE(store_->EnqueueBatch(parts, ToUnixMillis(clock_.WallNow())).has_value());
  book_->Release(reserved);
  EXPECT_EQ(book_->UsageOf("acme", quotas[1]).used, 5);
  // More than a limit never fits.
  std::vector<storage::NewDelivery> huge = {Part("slack", 11)};
  denied = book_->Charge(huge, other);
  ASSERT_TRUE(denied.has_value());
  EXPECT_EQ(denied->decision.retry_after_ms, -1);
  // A tenant without quotas is charged nothing.
  std::vector<storage::NewDelivery> untracked = {Part("slack", 1)};
  untracked[0].tenant = "nobody";
  EXPECT_FALSE(book_->Charge(untracked, other).has_value());
  EXPECT_TRUE(untracked[0].charges.empty());
}

// Verifies a shadow quota: it never refuses; an item it would be over is accepted, named in
// shadow_refused and not charged to it (so its count is what an enforced one would have let
// in), while an enforced quota of the same tenant still refuses (and then nothing is named).
TEST_F(QuotaBookTest, ShadowQuotaNamesWhatItWouldRefuseAndRefusesNothing) {
  config::QuotaMap own;
  own["trial"] = {.limit = 2, .window = Millis(3'600'000), .shadow = true};
  own["hard"] = {.limit = 4, .window = Millis(3'600'000)};
  book_->SetOwnQuotas("beta", own);
  int accepted = 0;
  std::vector<std::string> shadow_refused;
  for (int i = 0; i < 5; ++i) {
    std::vector<storage::NewDelivery> parts = {Part("slack", 1)};
    parts[0].tenant = "beta";
    QuotaBook::Reservation reserved;
    auto denied = book_->Charge(parts, reserved, &shadow_refused);
    if (denied) {
      EXPECT_EQ(denied->quota.name, "hard") << i;
      continue;
    }
    ++accepted;
    ASSERT_TRUE(store_->EnqueueBatch(parts, ToUnixMillis(clock_.WallNow())).has_value());
    book_->Release(reserved);
  }
  EXPECT_EQ(accepted, 4);  // the enforced quota's limit; the shadow one refused none
  EXPECT_EQ(shadow_refused, (std::vector<std::string>{"trial", "trial"}));
  for (const QuotaBook::Quota& q : book_->QuotasOf("beta")) {
    EXPECT_EQ(book_->UsageOf("beta", q).used, q.name == "trial" ? 2 : 4) << q.name;
  }
}

}  // namespace
}  // namespace egress::service
