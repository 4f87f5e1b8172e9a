#pragma once

// What the intake routes (POST /v1/deliveries and its batch form) share. All of it runs on the
// loop, except the work OnStore hands to the storage pool.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/post.hpp>
#include <tl/expected.hpp>

#include "dispatcher/service/api/error.h"
#include "dispatcher/service/credential_book.h"
#include "dispatcher/service/api/delivery_request.h"
#include "dispatcher/service/api/http_server.h"
#include "dispatcher/service/api/intake_limiter.h"
#include "dispatcher/service/service.h"
#include "storage/delivery.h"

namespace egress::service {

// Runs `work` on the storage pool, then `done(result)` on the loop.
template <class Work, class Done>
void OnStore(Service& s, Work work, Done done) {
  boost::asio::post(
      s.storage_pool(), [&s, work = std::move(work), done = std::move(done)]() mutable {
        auto result = work(s.store());
        boost::asio::post(s.io(), [done = std::move(done), result = std::move(result)]() mutable {
          done(std::move(result));
        });
      });
}

// The 429 of the backpressure contract, with every header.
HttpResponse Throttled(const IntakeLimiter::Decision& d, WallTime now, std::string_view why);

// The store's refusal; a 503 carries Retry-After.
HttpResponse Unavailable(const Status& s);

// The delivery just stored from `in` under `id`, as the delivery loop is told of it.
storage::Delivery Queued(storage::NewDelivery in, const std::string& id, int64_t now_ms);

// The platforms of the credentials one request names, looked up once per (tenant, name) among
// the last few pairs: a batch names few, and the book takes a lock and copies secrets.
class CredentialPlatforms {
 public:
  explicit CredentialPlatforms(const CredentialBook& book) : book_(book) {}

  // The platform of the tenant's credential `name`; nullopt when it is not registered.
  const std::optional<std::string>& Find(const std::string& tenant, const std::string& name);

 private:
  static constexpr size_t kRemembered = 8;
  struct Entry {
    std::string tenant, name;
    std::optional<std::string> platform;
  };
  const CredentialBook& book_;
  std::vector<Entry> recent_;
  size_t next_ = 0;
};

// Checks one item: shape (CheckDeliveryFields), then the tenant's credential.
tl::expected<storage::NewDelivery, ApiError> CheckItem(Service& s, DeliveryFields&& fields,
                                                       CredentialPlatforms& credentials);

}  // namespace egress::service
