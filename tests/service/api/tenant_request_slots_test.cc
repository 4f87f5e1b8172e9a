#include "dispatcher/service/api/tenant_request_slots.h"

#include <memory>

#include <gtest/gtest.h>

namespace egress::service {
namespace {

// Verifies the cap per tenant, that a slot comes back when its last handle goes, that tenants
// do not share slots and that a tenant with nothing in flight is not held.
TEST(TenantRequestSlotsTest, CapsEachTenantAndGivesSlotsBack) {
  TenantRequestSlots slots(2);
  std::shared_ptr<void> a1 = slots.TryTake("a");
  std::shared_ptr<void> a2 = slots.TryTake("a");
  ASSERT_TRUE(a1 && a2);
  EXPECT_EQ(slots.TryTake("a"), nullptr);
  EXPECT_EQ(slots.in_flight("a"), 2u);
  std::shared_ptr<void> b1 = slots.TryTake("b");
  EXPECT_TRUE(b1);
  std::shared_ptr<void> copy = a1;
  a1.reset();
  EXPECT_EQ(slots.in_flight("a"), 2u);  // a copy still holds it
  copy.reset();
  EXPECT_EQ(slots.in_flight("a"), 1u);
  EXPECT_TRUE(slots.TryTake("a"));  // taken and given back at once
  a2.reset();
  b1.reset();
  EXPECT_EQ(slots.in_flight("a"), 0u);
  EXPECT_EQ(slots.in_flight("b"), 0u);
}

// Verifies a handle may outlive the slots it came from.
TEST(TenantRequestSlotsTest, HandleOutlivesTheSlots) {
  std::shared_ptr<void> held;
  {
    TenantRequestSlots slots(1);
    held = slots.TryTake("a");
    ASSERT_TRUE(held);
  }
  held.reset();  // no use after free (ASan would say)
}

}  // namespace
}  // namespace egress::service
