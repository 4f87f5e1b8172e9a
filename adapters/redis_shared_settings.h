#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "adapters/redis_connection.h"
#include "adapters/shared_settings.h"
#include "dispatcher/base/clock.h"
#include "dispatcher/base/status.h"

namespace egress::adapters {

// SharedSettings through the Redis of the budgets. Put writes the hash field "<prefix>settings"
// `name` as "<version>:<text>", the version taken from the counter "<prefix>settings:version", in
// one script. Every node reads the counter every poll_interval and, when it moved, reads the hash
// and reports each setting whose version is newer than the newest it reported (all of them after
// a start, or after Redis lost the counter). The two keys never expire: a setting stays until it
// is replaced, as in each node's own store. A field longer than kMaxSettingBytes, or of another
// shape, is skipped.
//
// All methods and callbacks run on the loop of `io` (the connection's); `connection` must
// outlive this object, whose timer and callbacks end with it.
class RedisSharedSettings final : public SharedSettings {
 public:
  RedisSharedSettings(boost::asio::io_context& io, RedisConnection& connection,
                      std::string key_prefix, Millis poll_interval, Changed changed);
  ~RedisSharedSettings() override;
  RedisSharedSettings(const RedisSharedSettings&) = delete;
  RedisSharedSettings& operator=(const RedisSharedSettings&) = delete;

  void Start() override;

 protected:
  void Send(const std::string& name, const std::string& text, Done landed) override;

 private:
  void Arm();
  void Poll();
  void Read(int64_t counter);

  boost::asio::steady_timer timer_;
  RedisConnection& connection_;
  std::string hash_;
  std::string counter_;
  Millis poll_interval_;
  Changed changed_;
  int64_t last_counter_ = -1;
  int64_t seen_version_ = 0;
  bool polling_ = false;
  std::shared_ptr<bool> alive_;
};

}  // namespace egress::adapters
