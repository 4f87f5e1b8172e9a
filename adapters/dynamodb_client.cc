#include "adapters/dynamodb_client.h"

#include <algorithm>
#include <charconv>
#include <utility>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <fmt/format.h>

#include "dispatcher/base/utf8.h"

namespace egress::adapters {
namespace {

namespace asio = boost::asio;
using nlohmann::json;

// The error's name: what follows '#' in the answer's "__type" ("" when there is none).
std::string ErrorType(const json& answer) {
  auto type = answer.find("__type");
  if (type == answer.end() || !type->is_string()) {
    return "";
  }
  const std::string& text = type->get_ref<const std::string&>();
  const size_t hash = text.rfind('#');
  return hash == std::string::npos ? text : text.substr(hash + 1);
}

// A short, printable form of a text DynamoDB answered (it never holds our credentials).
std::string Shown(std::string_view text) {
  std::string out = ToValidUtf8(text.substr(0, 160));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20) {
      c = ' ';
    }
  }
  return out;
}

// The answers of a request DynamoDB did not accept as ours: credentials wrong, expired or not
// allowed, or a signature refused (a clock far off). Nothing works until that changes: the
// client is down, and the mode of on_budget_store_down applies.
bool Refused(std::string_view type) {
  return type == "UnrecognizedClientException" || type == "InvalidSignatureException" ||
         type == "ExpiredTokenException" || type == "AccessDeniedException" ||
         type == "MissingAuthenticationTokenException" || type == "IncompleteSignatureException" ||
         type == "InvalidClientTokenId" || type == "SignatureDoesNotMatch";
}

// Answers worth trying again after a backoff: throttling, DynamoDB's own faults, and a write
// that met another region's write to the same item (a global table with multi-Region strong
// consistency; AWS's SDKs retry it).
bool Throttled(std::string_view type) {
  return type == "ProvisionedThroughputExceededException" || type == "ThrottlingException" ||
         type == "RequestLimitExceeded" || type == "InternalServerError" ||
         type == "ServiceUnavailable" || type == "ReplicatedWriteConflictException";
}

}  // namespace

Result<int64_t> DynamoNumber(const json& item, std::string_view name, int64_t fallback) {
  auto attribute = item.find(name);
  if (attribute == item.end()) {
    return fallback;
  }
  if (!attribute->is_object()) {
    return Status::Corruption(fmt::format("dynamodb attribute {} is not typed", name));
  }
  auto number = attribute->find("N");
  if (number == attribute->end() || !number->is_string()) {
    return Status::Corruption(fmt::format("dynamodb attribute {} is not a number", name));
  }
  const std::string& text = number->get_ref<const std::string&>();
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return Status::Corruption(fmt::format("dynamodb attribute {} is not an integer", name));
  }
  return value;
}

DynamoDbClient::DynamoDbClient(asio::io_context& io, const Clock& clock, HttpTransport& transport,
                               Random& random, DynamoDbOptions options)
    : io_(io),
      clock_(clock),
      transport_(transport),
      random_(random),
      options_(std::move(options)),
      alive_(std::make_shared<bool>(true)) {
  if (options_.endpoint.ends_with('/')) {
    options_.endpoint.pop_back();
  }
}

DynamoDbClient::~DynamoDbClient() { *alive_ = false; }

void DynamoDbClient::Start() { EnsureTable(); }

void DynamoDbClient::Call(std::string_view operation, json body, Done done) {
  if (!body.contains("RequestItems")) {
    body["TableName"] = options_.table;
  }
  Send(std::string(operation), body.dump(), 1, std::move(done));
}

void DynamoDbClient::Send(std::string operation, std::string body, int attempt, Done done) {
  HttpRequest request;
  request.method = "POST";
  request.url = options_.endpoint + "/";
  request.headers = {{"Content-Type", "application/x-amz-json-1.0"},
                     {"X-Amz-Target", "DynamoDB_20120810." + operation}};
  request.body = body;
  request.timeout = options_.timeout;
  request.connect_timeout = std::min(options_.timeout, Millis(1000));
  SignAwsRequest(request, options_.credentials, options_.region, "dynamodb", clock_.WallNow());
  ++requests_;
  transport_.Send(
      std::move(request), [this, alive = std::weak_ptr<bool>(alive_),
                           operation = std::move(operation), body = std::move(body), attempt,
                           done = std::move(done)](Result<HttpResponse> answer) mutable {
        if (auto a = alive.lock(); !a || !*a) {
          return;
        }
        if (!answer) {
          // No answer: DynamoDB (or the way to it) is down. Not tried again here: the caller's
          // mode (local_share or hold) applies until a probe is answered.
          const std::string why =
              fmt::format("dynamodb {} failed: {}", operation, Shown(answer.error().message()));
          SetUp(false, why);
          done(Status::Unavailable(why));
          return;
        }
        const json parsed = json::parse(answer->body, nullptr, false);
        if (parsed.is_discarded() || !parsed.is_object()) {
          if (answer->status >= 500) {
            Retry(std::move(operation), std::move(body), attempt, std::move(done));
            return;
          }
          done(Status::Corruption(fmt::format("dynamodb {} answered {} without a JSON object",
                                              operation, answer->status)));
          return;
        }
        if (answer->status == 200) {
          done(parsed);
          return;
        }
        const std::string type = ErrorType(parsed);
        if (answer->status >= 500 || Throttled(type)) {
          Retry(std::move(operation), std::move(body), attempt, std::move(done));
          return;
        }
        std::string message;
        if (auto m = parsed.find("message"); m != parsed.end() && m->is_string()) {
          message = Shown(m->get_ref<const std::string&>());
        }
        if (Refused(type)) {
          const std::string why =
              fmt::format("dynamodb {} refused the credentials: {}", operation, Shown(type));
          SetUp(false, why);
          done(Status::Unavailable(why));
        } else if (type == "ConditionalCheckFailedException") {
          done(Status::FailedPrecondition("dynamodb condition did not hold"));
        } else if (type == "ResourceNotFoundException") {
          // The table is gone (deleted, or a fresh local server): down until it is there again.
          const std::string why =
              fmt::format("dynamodb {}: table {} not found", operation, options_.table);
          table_ready_ = false;
          SetUp(false, why);
          done(Status::NotFound(why));
        } else {
          done(Status::InvalidArgument(
              fmt::format("dynamodb {} refused: {} {}", operation, Shown(type), message)));
        }
      });
}

void DynamoDbClient::Retry(std::string operation, std::string body, int attempt, Done done) {
  ++retried_;
  if (attempt >= options_.max_attempts) {
    const std::string why =
        fmt::format("dynamodb {} throttled or failed {} times", operation, attempt);
    SetUp(false, why);
    done(Status::Unavailable(why));
    return;
  }
  // Full jitter: a wait drawn from [0, backoff * 2^(attempt-1)].
  const int64_t cap = options_.backoff.count() << std::min(attempt - 1, 10);
  const Millis wait(static_cast<int64_t>(random_.Next() % static_cast<uint64_t>(cap + 1)));
  auto timer = std::make_shared<asio::steady_timer>(io_, wait);
  timer->async_wait([this, timer, alive = std::weak_ptr<bool>(alive_),
                     operation = std::move(operation), body = std::move(body), attempt,
                     done = std::move(done)](const boost::system::error_code&) mutable {
    if (auto a = alive.lock(); !a || !*a) {
      return;
    }
    Send(std::move(operation), std::move(body), attempt + 1, std::move(done));
  });
}

void DynamoDbClient::After(Millis wait, std::function<void()> fn) {
  auto timer = std::make_shared<asio::steady_timer>(io_, wait);
  timer->async_wait([timer, alive = std::weak_ptr<bool>(alive_),
                     fn = std::move(fn)](const boost::system::error_code&) {
    if (auto a = alive.lock(); a && *a) {
      fn();
    }
  });
}

void DynamoDbClient::EnsureTable() {
  Call("DescribeTable", json::object(), [this](Result<json> answer) {
    if (answer.has_value()) {
      const json* status = nullptr;
      if (auto t = answer->find("Table"); t != answer->end() && t->is_object()) {
        if (auto s = t->find("TableStatus"); s != t->end() && s->is_string()) {
          status = &*s;
        }
      }
      if (status != nullptr && *status == "ACTIVE") {
        table_ready_ = true;
        SetUp(true, "");
        return;
      }
      AwaitActive(0);
      return;
    }
    if (answer.error().code() == Status::Code::kNotFound && options_.create_table) {
      json create = {
          {"AttributeDefinitions", {{{"AttributeName", kDynamoKey}, {"AttributeType", "S"}}}},
          {"KeySchema", {{{"AttributeName", kDynamoKey}, {"KeyType", "HASH"}}}},
          {"BillingMode", "PAY_PER_REQUEST"}};
      Call("CreateTable", std::move(create), [this](Result<json> created) {
        if (!created.has_value() && created.error().code() != Status::Code::kInvalidArgument) {
          SetUp(false, created.error().message());
          ScheduleProbe();
          return;
        }
        // Created, or created meanwhile by another node (ResourceInUseException).
        AwaitActive(0);
      });
      return;
    }
    SetUp(false, answer.error().message());
    ScheduleProbe();
  });
}

void DynamoDbClient::AwaitActive(int polls) {
  if (polls >= 300) {
    SetUp(false, fmt::format("dynamodb table {} never became ACTIVE", options_.table));
    ScheduleProbe();
    return;
  }
  auto timer = std::make_shared<asio::steady_timer>(io_, Millis(polls == 0 ? 0 : 100));
  timer->async_wait(
      [this, timer, polls, alive = std::weak_ptr<bool>(alive_)](const boost::system::error_code&) {
        if (auto a = alive.lock(); !a || !*a) {
          return;
        }
        Call("DescribeTable", json::object(), [this, polls](Result<json> answer) {
          if (answer.has_value()) {
            auto t = answer->find("Table");
            auto status = t != answer->end() && t->is_object() ? t->find("TableStatus") : t;
            if (t != answer->end() && t->is_object() && status != t->end() && status->is_string() &&
                *status == "ACTIVE") {
              EnableTtl();
              table_ready_ = true;
              SetUp(true, "");
              return;
            }
          }
          AwaitActive(polls + 1);
        });
      });
}

void DynamoDbClient::EnableTtl() {
  // Items expire a day after their meter and park are spent (attribute "x", epoch seconds).
  // Servers without UpdateTimeToLive (dynalite) refuse it; the items then stay, harmlessly.
  json ttl = {{"TimeToLiveSpecification", {{"Enabled", true}, {"AttributeName", "x"}}}};
  Call("UpdateTimeToLive", std::move(ttl), [](Result<json>) {});
}

void DynamoDbClient::SetUp(bool up, const std::string& why) {
  if (up == up_) {
    if (!up) {
      ScheduleProbe();
    }
    return;
  }
  up_ = up;
  if (observer_) {
    observer_(up, why);
  }
  if (!up) {
    ScheduleProbe();
  }
}

void DynamoDbClient::ScheduleProbe() {
  if (probe_scheduled_) {
    return;
  }
  probe_scheduled_ = true;
  auto timer = std::make_shared<asio::steady_timer>(io_, options_.probe_every);
  timer->async_wait(
      [this, timer, alive = std::weak_ptr<bool>(alive_)](const boost::system::error_code&) {
        if (auto a = alive.lock(); !a || !*a) {
          return;
        }
        probe_scheduled_ = false;
        Probe();
      });
}

void DynamoDbClient::Probe() {
  if (!table_ready_) {
    EnsureTable();
    return;
  }
  json get = {{"Key", {{kDynamoKey, {{"S", "probe"}}}}}};
  Call("GetItem", std::move(get), [this](Result<json> answer) {
    if (answer.has_value()) {
      SetUp(true, "");
    } else {
      SetUp(false, answer.error().message());
    }
  });
}

const std::string* DynamoString(const json& item, std::string_view name) {
  auto attribute = item.find(name);
  if (attribute == item.end() || !attribute->is_object()) {
    return nullptr;
  }
  auto text = attribute->find("S");
  if (text == attribute->end() || !text->is_string()) {
    return nullptr;
  }
  return &text->get_ref<const std::string&>();
}

json DynamoN(int64_t value) { return {{"N", std::to_string(value)}}; }

json DynamoS(std::string_view value) { return {{"S", std::string(value)}}; }

json DynamoKeyOf(std::string_view key) { return {{kDynamoKey, DynamoS(key)}}; }

Result<DynamoBatchRead> ParseBatchGet(const json& answer, const std::string& table) {
  DynamoBatchRead read;
  auto unprocessed = answer.find("UnprocessedKeys");
  read.partial = unprocessed != answer.end() && unprocessed->is_object() && !unprocessed->empty();
  auto responses = answer.find("Responses");
  if (responses == answer.end() || !responses->is_object()) {
    if (read.partial) {
      return read;
    }
    return Status::Corruption("dynamodb BatchGetItem answered no Responses");
  }
  auto found = responses->find(table);
  if (found == responses->end()) {
    return read;
  }
  if (!found->is_array()) {
    return Status::Corruption("dynamodb BatchGetItem answered a table that is no list");
  }
  for (const json& item : *found) {
    if (!item.is_object()) {
      continue;
    }
    if (const std::string* key = DynamoString(item, kDynamoKey)) {
      read.items[*key] = item;
    }
  }
  return read;
}

json BatchGetBody(const std::string& table, const std::vector<std::string>& keys) {
  json wanted = json::array();
  for (const std::string& key : keys) {
    wanted.push_back(DynamoKeyOf(key));
  }
  return {{"RequestItems", {{table, {{"Keys", std::move(wanted)}, {"ConsistentRead", true}}}}}};
}

}  // namespace egress::adapters
