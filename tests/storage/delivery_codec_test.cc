#include "storage/delivery_codec.h"

#include <cstdint>
#include <functional>
#include <vector>

#include <gtest/gtest.h>

#include "storage/coding.h"

namespace egress::storage {
namespace {

Delivery Sample() {
  Delivery d;
  d.id = "01JDQ6V5ZK8Q0000000000000A";
  d.tenant = "acme";
  d.platform = "slack";
  d.destination = "C012345";
  d.credential = "bot";
  d.payload = std::string("{\"text\":\"hi\"}\0binary\xff", 22);
  d.idempotency_key = "k1";
  d.ordering_key = "thread-9";
  d.cost = 5;
  d.created_ms = 1'767'225'600'000;
  d.state = DeliveryState::kDeferred;
  d.attempts = 2;
  d.next_attempt_ms = 1'767'225'660'000;
  d.reason = "retry_after";
  d.updated_ms = 1'767'225'601'000;
  d.history.push_back(Attempt{1'767'225'600'500,
                              120,
                              429,
                              "ratelimited",
                              "",
                              {{"retry-after", "30"}, {"x-ratelimit-remaining", "0"}}});
  d.history.push_back(Attempt{1'767'225'601'000, 0, 0, "", "connect timeout", {}});
  d.charges.push_back(QuotaCharge{"monthly", 2'592'000'000, 43'200'000, 1'769'860'800'000, 7});
  d.charges.push_back(QuotaCharge{"daily", 86'400'000, 1'440'000, 1'767'312'000'000, 3});
  d.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  d.priority = pacing::Priority::kBulk;
  return d;
}

// Verifies that every field survives encode then decode.
TEST(DeliveryCodecTest, RoundTripsEveryField) {
  const Delivery d = Sample();
  Result<Delivery> back = DecodeDelivery(EncodeDelivery(d));
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_EQ(*back, d);
}

// Verifies that a field from a newer version is skipped, not an error.
TEST(DeliveryCodecTest, SkipsUnknownFields) {
  std::string bytes = EncodeDelivery(Sample());
  PutVarint64(bytes, 999);
  PutLengthPrefixed(bytes, "from the future");
  Result<Delivery> back = DecodeDelivery(bytes);
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_EQ(*back, Sample());
}

// Verifies that a record written before the traceparent field (tag 19) still reads, with an
// empty traceparent, and that a record without one encodes no tag 19.
TEST(DeliveryCodecTest, ReadsRecordsWithoutTraceparent) {
  Delivery old = Sample();
  old.traceparent.clear();
  const std::string bytes = EncodeDelivery(old);
  // Tag 19, length 55, the value: nothing else differs.
  EXPECT_EQ(EncodeDelivery(Sample()).size() - bytes.size(), 1u + 1u + 55u);
  Result<Delivery> back = DecodeDelivery(bytes);
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_EQ(back->traceparent, "");
  EXPECT_EQ(*back, old);
}

// Verifies that a record written before the priority field (tag 20) reads as normal, that a
// normal one encodes no tag 20, and that a stored priority no intake writes is Corruption.
TEST(DeliveryCodecTest, PriorityIsOptionalAndChecked) {
  Delivery normal = Sample();
  normal.priority = pacing::Priority::kNormal;
  const std::string bytes = EncodeDelivery(normal);
  EXPECT_EQ(EncodeDelivery(Sample()).size() - bytes.size(), 3u);  // tag, length, value
  Result<Delivery> back = DecodeDelivery(bytes);
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_EQ(back->priority, pacing::Priority::kNormal);
  for (int64_t hostile : {int64_t{3}, int64_t{-1}, INT64_MAX}) {
    std::string bad = bytes;
    std::string value;
    PutVarint64(value, ZigZag(hostile));
    PutVarint64(bad, 20);
    PutLengthPrefixed(bad, value);
    Result<Delivery> r = DecodeDelivery(bad);
    ASSERT_FALSE(r.has_value()) << hostile;
    EXPECT_EQ(r.error().code(), Status::Code::kCorruption);
  }
}

// Verifies that every truncation of a record is refused as Corruption or decodes a prefix that
// still has its id, and never crashes.
TEST(DeliveryCodecTest, TruncationIsCorruptionNotCrash) {
  const std::string bytes = EncodeDelivery(Sample());
  for (size_t n = 0; n < bytes.size(); ++n) {
    Result<Delivery> r = DecodeDelivery(std::string_view(bytes.data(), n));
    if (!r) {
      EXPECT_EQ(r.error().code(), Status::Code::kCorruption);
    }
  }
  EXPECT_EQ(DecodeDelivery("\x07garbage").error().code(), Status::Code::kCorruption);
  EXPECT_EQ(DecodeDelivery("").error().code(), Status::Code::kCorruption);
}

// Verifies that a stored quota charge out of what intake writes is Corruption, not a counter
// overflow or a tenant held over its quota for centuries: units past the limit or negative, a
// window of 0 or past a year, a slice longer than its window, an expiry past a window and a
// slice after the last change, a name no quota can have.
TEST(DeliveryCodecTest, HostileChargesAreCorruption) {
  const auto with = [](auto change) {
    Delivery d = Sample();
    change(d.charges[0]);
    return DecodeDelivery(EncodeDelivery(d));
  };
  const std::vector<std::function<void(QuotaCharge&)>> hostile = {
      [](QuotaCharge& c) { c.units = INT64_MIN; },
      [](QuotaCharge& c) { c.units = -1; },
      [](QuotaCharge& c) { c.units = kMaxChargeUnits + 1; },
      [](QuotaCharge& c) { c.window_ms = 0; },
      [](QuotaCharge& c) { c.window_ms = kMaxChargeWindowMs + 1; },
      [](QuotaCharge& c) { c.slice_ms = c.window_ms + 1; },
      [](QuotaCharge& c) { c.slice_ms = 0; },
      [](QuotaCharge& c) { c.expires_ms = INT64_MAX; },
      [](QuotaCharge& c) { c.expires_ms = -1; },
      [](QuotaCharge& c) { c.quota = "bad name"; },
      [](QuotaCharge& c) { c.quota = std::string(65, 'q'); },
      [](QuotaCharge& c) { c.quota.clear(); },
  };
  for (size_t i = 0; i < hostile.size(); ++i) {
    Result<Delivery> r = with(hostile[i]);
    ASSERT_FALSE(r.has_value()) << "case " << i;
    EXPECT_EQ(r.error().code(), Status::Code::kCorruption) << "case " << i;
  }
  // The largest a charge can be still reads.
  EXPECT_TRUE(with([](QuotaCharge& c) { c.units = kMaxChargeUnits; }).has_value());
}

// Verifies that a stored traceparent that is not one (a CR LF would add a header to the webhook
// request it goes into) is dropped on read, the delivery kept.
TEST(DeliveryCodecTest, StoredTraceparentThatIsNotOneIsDropped) {
  Delivery d = Sample();
  d.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\nX-Evil: 1";
  Result<Delivery> back = DecodeDelivery(EncodeDelivery(d));
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_EQ(back->traceparent, "");
  EXPECT_EQ(back->id, d.id);
}

}  // namespace
}  // namespace egress::storage
