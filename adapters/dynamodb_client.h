#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include "adapters/aws_sigv4.h"
#include "adapters/http_transport.h"
#include "dispatcher/base/clock.h"
#include "dispatcher/base/random.h"
#include "dispatcher/base/result.h"

namespace egress::adapters {

struct DynamoDbOptions {
  // Where requests go: "https://dynamodb.<region>.amazonaws.com", a VPC endpoint, or a local
  // DynamoDB-compatible server (the tests' dynalite). Required.
  std::string endpoint;
  std::string region;          // signs every request. Required.
  std::string table;           // 3 to 255 of [A-Za-z0-9_.-]. Required.
  AwsCredentials credentials;  // secrets: never log them
  // Start creates the table when it is missing (on-demand capacity, partition key "k"), for
  // development; production creates it beforehand (docs/deployment.md). Default: false.
  bool create_table = false;
  // One request, connect included. Default: 1 s.
  Millis timeout{1000};
  // Tries of a request DynamoDB throttled (ProvisionedThroughputExceededException,
  // ThrottlingException, RequestLimitExceeded) or failed with a 5xx, spaced by a full-jitter
  // backoff from `backoff` doubling (AWS's "exponential backoff and jitter"). Default: 3, 20 ms.
  int max_attempts = 3;
  Millis backoff{20};
  // While down, how often a probe (a GetItem of one key) asks whether DynamoDB answers again.
  // Default: 500 ms.
  Millis probe_every{500};
};

// The partition key every item of the table has: a string attribute named "k".
inline constexpr std::string_view kDynamoKey = "k";

// DynamoDB's JSON API (the 2012-08-10 version, as the AWS SDKs speak it) over an HttpTransport on
// the Asio loop: each call is one signed POST (aws_sigv4.h) answered later through a callback;
// nothing blocks the loop. Throttling answers and 5xx are tried again after a jittered backoff
// (a timer, never a sleep); a call that still fails, or whose transport fails, fails with
// kUnavailable and puts the client down until a probe is answered.
//
// Errors: kFailedPrecondition for a ConditionExpression that did not hold
// (ConditionalCheckFailedException), kNotFound for a missing table (ResourceNotFoundException,
// which also puts the client down until the table is there), kUnavailable as above and for
// credentials DynamoDB refuses (unrecognized, expired, not allowed, a signature refused: the
// client is down until a probe is accepted), kInvalidArgument for any other error DynamoDB
// answers, kCorruption for an answer that is not a JSON object. Messages never hold a
// credential. Credentials are those given: temporary ones (a session token) are not renewed.
//
// All methods and callbacks run on the thread running `io`; `clock`, `transport` and `random`
// must outlive the client. Callbacks of calls still on their way when the client is destroyed are
// dropped.
class DynamoDbClient {
 public:
  using Done = std::function<void(Result<nlohmann::json>)>;
  // Told each time the client comes up or goes down, with why (never a secret).
  using StateObserver = std::function<void(bool up, const std::string& why)>;

  DynamoDbClient(boost::asio::io_context& io, const Clock& clock, HttpTransport& transport,
                 Random& random, DynamoDbOptions options);
  ~DynamoDbClient();
  DynamoDbClient(const DynamoDbClient&) = delete;
  DynamoDbClient& operator=(const DynamoDbClient&) = delete;

  // Checks that the table exists (creating it with create_table), then the client is up. Until
  // then, and while it is down, probes go on at probe_every. Call once.
  void Start();
  void SetStateObserver(StateObserver observer) { observer_ = std::move(observer); }

  // Calls `operation` ("GetItem", "UpdateItem", ...) with `body`, to which the table's name is
  // added under "TableName" (BatchGetItem's "RequestItems" takes it from the caller). `done` runs
  // exactly once, later, unless the client is destroyed first.
  void Call(std::string_view operation, nlohmann::json body, Done done);

  // Runs `fn` on the loop after `wait` (a timer, never a sleep), unless the client is destroyed
  // first.
  void After(Millis wait, std::function<void()> fn);

  bool up() const { return up_; }
  const std::string& table() const { return options_.table; }
  // Requests sent (each try counts), and tries throttled or failed with a 5xx.
  uint64_t requests() const { return requests_; }
  uint64_t retried() const { return retried_; }

 private:
  void Send(std::string operation, std::string body, int attempt, Done done);
  void Retry(std::string operation, std::string body, int attempt, Done done);
  void EnsureTable();
  void AwaitActive(int polls);
  void EnableTtl();
  void SetUp(bool up, const std::string& why);
  void ScheduleProbe();
  void Probe();

  boost::asio::io_context& io_;
  const Clock& clock_;
  HttpTransport& transport_;
  Random& random_;
  DynamoDbOptions options_;
  StateObserver observer_;
  bool up_ = false;
  bool table_ready_ = false;
  bool probe_scheduled_ = false;
  uint64_t requests_ = 0;
  uint64_t retried_ = 0;
  std::shared_ptr<bool> alive_;
};

// The "N" (number) attribute `name` of a DynamoDB item as an int64; `fallback` when absent.
// kCorruption when present but not an integer.
Result<int64_t> DynamoNumber(const nlohmann::json& item, std::string_view name, int64_t fallback);
// The "S" (string) attribute `name` of an item; nullptr when absent or of another type.
const std::string* DynamoString(const nlohmann::json& item, std::string_view name);

// Attribute values: a number, a string, and the key of the item named `key`.
nlohmann::json DynamoN(int64_t value);
nlohmann::json DynamoS(std::string_view value);
nlohmann::json DynamoKeyOf(std::string_view key);

// What a consistent BatchGetItem of the table answered: each item found, by its key (items
// without a string key are left out), and whether DynamoDB left keys unread (throttled; the
// caller reads them again). kCorruption for an answer of another shape.
struct DynamoBatchRead {
  std::map<std::string, nlohmann::json> items;
  bool partial = false;
};
Result<DynamoBatchRead> ParseBatchGet(const nlohmann::json& answer, const std::string& table);
// The body of a consistent BatchGetItem of `keys` (at most 100, distinct) from `table`.
nlohmann::json BatchGetBody(const std::string& table, const std::vector<std::string>& keys);

}  // namespace egress::adapters
