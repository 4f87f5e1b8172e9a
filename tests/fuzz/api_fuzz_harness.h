#pragma once

// The body of the HTTP API fuzz target (api_fuzz.cc), shared with the seed replay in the
// integration tests (api_fuzz_seeds_itest.cc): a real Service (RocksDB in a temporary directory,
// the real adapters, the delivery loop) whose router is driven without sockets.
//
// Input layout: up to kMaxRequests requests separated by the line "\n\x1e\n" (so one input can
// register a credential, then use it). Each request: byte 0 picks the method ('0' GET, '1' POST,
// '2' PUT, '3' DELETE, '4' PATCH, '5' HEAD, '6' OPTIONS: modulo 8, so '7' and any other byte
// map too), the rest up to the first '\n' is the target, then header lines
// ("Name: value") up to an empty line, then the body. The request is written out as HTTP/1.1
// (Host and Content-Length added) and read by Beast's request parser with the server's limits,
// as the HTTP server reads it; what that parser refuses is skipped (the server answers 400
// itself). The request then goes to Route (dispatcher/service/api/handlers.h), and the harness
// runs the loop until it is answered.
//
// A finding is: an exception out of Route or out of any handler the loop runs; no answer within
// 60 s, or more than one; a status outside 100..599; an error (4xx, 5xx) that is not the JSON
// envelope {"error":"<code>",...}; a 5xx other than 503; a JSON answer that does not parse; an
// answer that holds a configured secret (a credential's token or signing secret, the admin
// token) that no request to this service carried (one that a client sent, it may have stored).
//
// The service is the one of serve with these differences: attempts go to an in-process
// transport that answers from a fixed rotation (200, 429 with Retry-After, 500, a refused
// connection) and never reaches the network; the event log shows errors only; the intake
// budget is out of the way. Tenant "acme" has the credentials "bot" (slack), "dbot"
// (discord), "line" (line) and "hooks" (webhook) and the API key kApiFuzzAcmeKey (added to a
// request without credentials of its own); the admin token is kApiFuzzAdminToken; the
// brute-force budget is out of the way. The
// service is replaced by a fresh one (empty store) every kRunsPerService inputs, so the store and
// the loop's memory stay bounded over a long run; a finding that depends on earlier inputs may
// therefore not reproduce alone.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace egress::service {

inline constexpr char kApiFuzzAdminToken[] = "fuzz-admin-token";
// Acme's API key, sent as "Authorization: Bearer" with every request that carries neither an
// Authorization nor an X-Admin-Token header of its own.
inline constexpr char kApiFuzzAcmeKey[] = "fuzz-acme-api-key-0123456789";
// The token of acme's Slack credential "bot".
inline constexpr char kApiFuzzSlackToken[] = "xoxb-fuzz-s3cret-slack-token";

class ApiFuzzHarness {
 public:
  static constexpr size_t kMaxRequests = 4;
  static constexpr int kRunsPerService = 2000;

  // Starts the service (EGRESS_CHECKs that it starts: without one there is nothing to fuzz).
  ApiFuzzHarness();
  ~ApiFuzzHarness();
  ApiFuzzHarness(const ApiFuzzHarness&) = delete;
  ApiFuzzHarness& operator=(const ApiFuzzHarness&) = delete;

  // Runs one input; empty when every answer was right, else what was wrong (a finding).
  std::string RunOnce(const uint8_t* data, size_t size);

  // Requests that reached Route since construction.
  uint64_t routed() const { return routed_; }
  // The status and body of the last answer.
  unsigned last_status() const { return last_status_; }
  const std::string& last_body() const { return last_body_; }

 private:
  struct State;
  // One request of an input; empty or a finding.
  std::string RunRequest(std::string_view request);
  void Restart();

  std::unique_ptr<State> state_;
  int runs_ = 0;
  uint64_t routed_ = 0;
  unsigned last_status_ = 0;
  std::string last_body_;
};

}  // namespace egress::service
