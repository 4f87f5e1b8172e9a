#include "tests/fuzz/api_fuzz_harness.h"

#include <stdlib.h>

#include <chrono>
#include <exception>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "adapters/api_key.h"
#include "adapters/http_transport.h"
#include "dispatcher/base/check.h"
#include "dispatcher/service/api/handlers.h"
#include "dispatcher/service/api/intake.h"
#include "dispatcher/service/event_log.h"
#include "dispatcher/service/service.h"

namespace egress::service {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using nlohmann::json;

constexpr std::string_view kSeparator = "\n\x1e\n";
// By byte 0 modulo 8, so that the digits '0' to '7' name them in the seeds.
constexpr std::string_view kMethods[] = {"GET",   "POST", "PUT",     "DELETE",
                                         "PATCH", "HEAD", "OPTIONS", "GET"};
constexpr const char* kSlackToken = kApiFuzzSlackToken;
constexpr char kDiscordToken[] = "fuzz-s3cret-discord-token";
constexpr char kLineToken[] = "fuzz-s3cret-line-token";
constexpr char kWebhookSecret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr std::string_view kSecrets[] = {kSlackToken,    kDiscordToken,      kLineToken,
                                         kWebhookSecret, kApiFuzzAdminToken, kApiFuzzAcmeKey};
constexpr auto kAnswerWithin = std::chrono::seconds(60);
// Ready handlers run after an answer, so that the delivery loop moves on between requests.
constexpr int kPollAfterAnswer = 256;

// Answers every request from a fixed rotation, by post (never inline, as CurlTransport); keeps
// nothing of the requests. Runs on the service's loop.
class RotatingTransport final : public adapters::HttpTransport {
 public:
  explicit RotatingTransport(asio::io_context& io) : io_(io) {}

  void Send(adapters::HttpRequest, adapters::HttpCallback done) override {
    ++in_flight_;
    asio::post(io_, [this, answer = Answer(next_++), done = std::move(done)]() mutable {
      --in_flight_;
      done(std::move(answer));
    });
  }
  size_t InFlight() const override { return in_flight_; }
  // Every answer is posted already: requests in flight complete on their own.
  void CancelAll() override {}

 private:
  static Result<adapters::HttpResponse> Answer(uint64_t n) {
    switch (n % 4) {
      case 0:
        return adapters::HttpResponse{.status = 200, .body = R"({"ok":true,"ts":"1.2"})"};
      case 1:
        return adapters::HttpResponse{
            .status = 429, .headers = {{"Retry-After", "1"}}, .body = R"({"ok":false})"};
      case 2:
        return adapters::HttpResponse{.status = 500, .body = "internal"};
      default:
        return Status::Unavailable("connection refused (fuzz transport)");
    }
  }

  asio::io_context& io_;
  uint64_t next_ = 0;
  size_t in_flight_ = 0;
};

ServiceOptions FuzzOptions(const std::string& store_path) {
  ServiceOptions o;
  o.http.listen = {.host = "127.0.0.1", .port = 0};
  o.admin_token = kApiFuzzAdminToken;
  o.auth.api_keys = {{"acme", adapters::ApiKeyDigest(kApiFuzzAcmeKey)}};
  // Wrong keys are what a fuzzer sends: the brute-force rule must not shut it out.
  o.auth.failure_budget = {1'000'000, 1000, 1'000'000};
  o.store.path = store_path;
  // Unused (the transport is in-process), and unreachable should that ever change.
  o.endpoints.slack_base_url = "http://127.0.0.1:9";
  o.endpoints.discord_base_url = "http://127.0.0.1:9";
  o.endpoints.line_base_url = "http://127.0.0.1:9";
  o.budget_defaults = {{pacing::BudgetName::kTenantIntake, {1'000'000, 1000, 1'000'000}}};
  o.credentials = {
      {"acme", {.name = "bot", .platform = "slack", .token = kSlackToken}},
      {"acme", {.name = "dbot", .platform = "discord", .token = kDiscordToken}},
      {"acme", {.name = "line", .platform = "line", .token = kLineToken}},
      {"acme", {.name = "hooks", .platform = "webhook", .secrets = {kWebhookSecret}}},
  };
  o.storage_threads = 2;
  return o;
}

std::string Clip(std::string_view text, size_t n = 300) {
  return std::string(text.substr(0, n)) + (text.size() > n ? "..." : "");
}

// What is wrong with `res`; empty when nothing. `client_secrets`: the configured secrets some
// request to this service carried (it may show what a client stored itself).
std::string CheckAnswer(const HttpResponse& res, const std::set<std::string_view>& client_secrets) {
  const unsigned status = res.result_int();
  const std::string_view body = res.body().view();
  if (status < 100 || status > 599) {
    return fmt::format("status {} is outside 100..599", status);
  }
  const bool json_type = res[http::field::content_type] == "application/json";
  if (json_type && !json::accept(body)) {
    return "a JSON answer that does not parse: " + Clip(body);
  }
  if (status >= 400) {
    const json envelope = json::parse(body, nullptr, false);
    if (!json_type || !envelope.is_object() || !envelope.contains("error") ||
        !envelope["error"].is_string() || envelope["error"].get<std::string>().empty() ||
        (envelope.contains("message") && !envelope["message"].is_string())) {
      return fmt::format("{} without the error envelope: {}", status, Clip(body));
    }
  }
  if (status >= 500 && status != 503) {
    return fmt::format("{}: {}", status, Clip(body));
  }
  for (std::string_view secret : kSecrets) {
    if (client_secrets.contains(secret)) {
      continue;
    }
    bool in_header = false;
    for (const auto& field : res) {
      const std::string_view value(field.value().data(), field.value().size());
      in_header = in_header || value.find(secret) != std::string_view::npos;
    }
    if (in_header || body.find(secret) != std::string::npos) {
      return fmt::format("the answer shows the secret '{}'", secret);
    }
  }
  return "";
}

}  // namespace

struct ApiFuzzHarness::State {
  State() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "relay-egress-fuzz-XXXXXX");
    EGRESS_CHECK(mkdtemp(tmpl.data()) != nullptr);
    dir = tmpl;
    io = std::make_unique<asio::io_context>();
    auto started = Service::Start(*io, clock, FuzzOptions(dir + "/store"),
                                  std::make_unique<RotatingTransport>(*io));
    if (!started) {
      std::fprintf(stderr, "api fuzz: the service did not start: %s\n",
                   started.error().ToString().c_str());
    }
    EGRESS_CHECK(started.has_value());
    service = std::move(*started);
  }

  ~State() {
    bool closed = false;
    service->Shutdown(Millis(1000), [&closed](Status) { closed = true; });
    const SteadyTime deadline = clock.Now() + kAnswerWithin;
    while (!closed && clock.Now() < deadline) {
      io->run_one_for(std::chrono::milliseconds(100));
    }
    EGRESS_CHECK(closed);
    service.reset();
    io.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }

  std::string dir;
  SystemClock clock;
  std::unique_ptr<asio::io_context> io;
  std::unique_ptr<Service> service;
  // The configured secrets some request to this service carried: the fuzzer learns them (from
  // the comparisons below) and stores them in deliveries, which may then show them.
  std::set<std::string_view> client_secrets;
};

ApiFuzzHarness::ApiFuzzHarness() {
  ConfigureEventLog(LogFormat::kText, LogLevel::kError);
  Restart();
}

ApiFuzzHarness::~ApiFuzzHarness() = default;

void ApiFuzzHarness::Restart() {
  state_.reset();
  state_ = std::make_unique<State>();
}

std::string ApiFuzzHarness::RunOnce(const uint8_t* data, size_t size) {
  if (++runs_ > kRunsPerService) {
    Restart();
    runs_ = 1;
  }
  std::string_view input(reinterpret_cast<const char*>(data), size);
  for (size_t n = 0; n < kMaxRequests; ++n) {
    const size_t sep = input.find(kSeparator);
    if (std::string finding = RunRequest(input.substr(0, sep)); !finding.empty()) {
      return finding;
    }
    if (sep == std::string_view::npos) {
      break;
    }
    input.remove_prefix(sep + kSeparator.size());
  }
  return "";
}

std::string ApiFuzzHarness::RunRequest(std::string_view request) {
  if (request.empty()) {
    return "";
  }
  const std::string_view method = kMethods[static_cast<uint8_t>(request[0]) % std::size(kMethods)];
  request.remove_prefix(1);
  const size_t nl = request.find('\n');
  const std::string_view target = request.substr(0, nl);
  std::string_view rest = nl == std::string_view::npos ? "" : request.substr(nl + 1);
  std::string wire = fmt::format("{} {} HTTP/1.1\r\nHost: fuzz\r\n", method, target);
  while (!rest.empty()) {
    const size_t end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? "" : rest.substr(end + 1);
    if (line.empty()) {
      break;
    }
    wire.append(line).append("\r\n");
  }
  wire.append(fmt::format("Content-Length: {}\r\n\r\n", rest.size())).append(rest);

  // As the server reads a request (http_session.cc): what its parser refuses never reaches
  // Route; the gate (Admit) decides on the header, with the key the request brings.
  http::request_parser<http::string_body> parser;
  parser.body_limit(std::numeric_limits<uint64_t>::max());  // not boost::none (http_session.cc)
  parser.eager(true);
  boost::beast::error_code ec;
  parser.put(asio::buffer(wire), ec);
  if (ec || !parser.is_done()) {
    return "";
  }
  HttpRequest req = parser.release();
  // Acme's key unless the request brings its own credential: the routes behind authentication
  // stay reachable to inputs that do not know the key.
  if (req.find(http::field::authorization) == req.end() && req.find("X-Admin-Token") == req.end()) {
    req.set(http::field::authorization, std::string("Bearer ") + kApiFuzzAcmeKey);
  }
  const std::string what = fmt::format("{} {}", method, Clip(target, 200));

  struct Answers {
    int count = 0;
    std::optional<HttpResponse> first;
  };
  auto answers = std::make_shared<Answers>();
  asio::io_context& io = *state_->io;
  ++routed_;
  try {
    Route(*state_->service, std::move(req), asio::ip::make_address("127.0.0.1"),
          [answers](HttpResponse&& res) {
            if (++answers->count == 1) {
              answers->first = std::move(res);
            }
          });
  } catch (const std::exception& e) {
    return fmt::format("{}: exception out of Route: {}", what, e.what());
  } catch (...) {
    return fmt::format("{}: exception out of Route", what);
  }
  // Runs the loop (the storage pool posts its results to it) until the answer came.
  const SteadyTime deadline = state_->clock.Now() + kAnswerWithin;
  try {
    while (answers->count == 0) {
      if (state_->clock.Now() > deadline) {
        return fmt::format("{}: no answer within {} s", what, kAnswerWithin.count());
      }
      io.run_one_for(std::chrono::milliseconds(100));
    }
    for (int i = 0; i < kPollAfterAnswer && io.poll_one() > 0; ++i) {
    }
  } catch (const std::exception& e) {
    return fmt::format("{}: exception out of a loop handler: {}", what, e.what());
  } catch (...) {
    return fmt::format("{}: exception out of a loop handler", what);
  }
  if (answers->count > 1) {
    return fmt::format("{}: answered {} times", what, answers->count);
  }
  last_status_ = answers->first->result_int();
  last_body_ = std::string(answers->first->body().view());
  for (std::string_view secret : kSecrets) {
    if (wire.find(secret) != std::string::npos) {
      state_->client_secrets.insert(secret);
    }
  }
  if (std::string wrong = CheckAnswer(*answers->first, state_->client_secrets); !wrong.empty()) {
    return fmt::format("{}: {}", what, wrong);
  }
  return "";
}

}  // namespace egress::service
