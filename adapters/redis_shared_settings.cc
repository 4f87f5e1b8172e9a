#include "adapters/redis_shared_settings.h"

#include <charconv>
#include <utility>
#include <vector>

namespace egress::adapters {
namespace {

// Takes the next version and stores "<version>:<text>" under the name, atomically.
constexpr char kPutScript[] =
    "local v = redis.call('INCR', KEYS[2])\n"
    "redis.call('HSET', KEYS[1], ARGV[1], v .. ':' .. ARGV[2])\n"
    "return v\n";

// A decimal integer (a reply's text), or -1.
int64_t ParseVersion(std::string_view text) {
  int64_t value = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) {
    return -1;
  }
  return value;
}

}  // namespace

RedisSharedSettings::RedisSharedSettings(boost::asio::io_context& io, RedisConnection& connection,
                                         std::string key_prefix, Millis poll_interval,
                                         Changed changed)
    : timer_(io),
      connection_(connection),
      hash_(key_prefix + "settings"),
      counter_(key_prefix + "settings:version"),
      poll_interval_(std::max(poll_interval, Millis(1))),
      changed_(std::move(changed)),
      alive_(std::make_shared<bool>(true)) {}

RedisSharedSettings::~RedisSharedSettings() { timer_.cancel(); }

void RedisSharedSettings::Start() { Arm(); }

void RedisSharedSettings::Arm() {
  timer_.expires_after(poll_interval_);
  std::weak_ptr<bool> alive = alive_;
  timer_.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || alive.expired()) {
      return;
    }
    Poll();
  });
}

void RedisSharedSettings::Send(const std::string& name, const std::string& text, Done landed) {
  connection_.Command({"EVAL", kPutScript, "2", hash_, counter_, name, text},
                      [landed = std::move(landed)](Result<RedisReply> reply) {
                        if (!reply) {
                          landed(reply.error());
                        } else if (reply->type != RedisReply::Type::kInteger) {
                          landed(Status::Unavailable("redis refused the shared setting"));
                        } else {
                          landed(Status::Ok());
                        }
                      });
}

void RedisSharedSettings::Poll() {
  if (!connection_.up()) {
    Arm();
    return;
  }
  Flush();
  std::weak_ptr<bool> alive = alive_;
  connection_.Command({"GET", counter_}, [this, alive](Result<RedisReply> reply) {
    if (alive.expired()) {
      return;
    }
    if (!reply ||
        (reply->type != RedisReply::Type::kString && reply->type != RedisReply::Type::kNil)) {
      Arm();
      return;
    }
    const int64_t counter = reply->type == RedisReply::Type::kNil ? 0 : ParseVersion(reply->text);
    if (counter < 0 || counter == last_counter_) {
      Arm();
      return;
    }
    if (counter < last_counter_) {
      seen_version_ = 0;  // Redis lost the settings and started again: report all it has
    }
    Read(counter);
  });
}

void RedisSharedSettings::Read(int64_t counter) {
  std::weak_ptr<bool> alive = alive_;
  connection_.Command({"HGETALL", hash_}, [this, alive, counter](Result<RedisReply> reply) {
    if (alive.expired()) {
      return;
    }
    if (!reply || reply->type != RedisReply::Type::kArray) {
      Arm();
      return;
    }
    int64_t newest = seen_version_;
    const auto& e = reply->elements;
    for (size_t i = 0; i + 1 < e.size(); i += 2) {
      if (e[i].type != RedisReply::Type::kString || e[i + 1].type != RedisReply::Type::kString ||
          e[i + 1].text.size() > kMaxSettingBytes) {
        continue;
      }
      const std::string& value = e[i + 1].text;
      const size_t sep = value.find(':');
      const int64_t version =
          sep == std::string::npos ? -1 : ParseVersion(std::string_view(value).substr(0, sep));
      if (version <= seen_version_) {
        continue;
      }
      newest = std::max(newest, version);
      changed_(e[i].text, value.substr(sep + 1));
      if (alive.expired()) {
        return;
      }
    }
    seen_version_ = newest;
    last_counter_ = counter;
    Arm();
  });
}

}  // namespace egress::adapters
