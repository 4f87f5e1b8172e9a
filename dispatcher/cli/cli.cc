#include "dispatcher/cli/cli.h"

#include <cstdio>
#include <cstdlib>
#include <tuple>

#include "config/load_config.h"
#include "dispatcher/base/clock.h"
#include "dispatcher/cli/time_flag.h"

namespace egress::cli {
namespace {

void AddConnection(CLI::App* cmd, CommandFlags& f, bool with_json) {
  cmd->add_option("--config", f.connection.config_path,
                  "TOML config file (listen, data_dir, token)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--profiles-dir", f.connection.profiles_dir,
                  "Platform profiles replacing the built-in ones");
  cmd->add_option("--server", f.connection.server,
                  "Service URL, http://host:port or https://host[:port] (default: http:// + the "
                  "config's server.listen)");
  cmd->add_option("--cacert", f.connection.cacert,
                  "CA certificates (PEM) to verify an https --server with (default: the "
                  "system's)")
      ->check(CLI::ExistingFile);
  auto* token_file = cmd->add_option("--token-file", f.connection.token_file,
                                     "File holding the API key or admin token (its first line)")
                         ->check(CLI::ExistingFile);
  cmd->add_option("--token", f.connection.token,
                  "API key or admin token; every user of this host can read it in the process "
                  "list: prefer --token-file or $RELAY_EGRESS_TOKEN (default: --token-file, "
                  "else $RELAY_EGRESS_TOKEN, else the config's admin_token)")
      ->excludes(token_file);
  cmd->add_option("--data-dir", f.connection.data_dir,
                  "Store to open when no service answers (default: the config's data_dir)");
  if (with_json) {
    cmd->add_flag("--json", f.json, "One JSON object per line");
  }
}

void AddFilters(CLI::App* cmd, DeliveryFilter& f) {
  cmd->add_option("--tenant", f.tenant, "Only this tenant");
  cmd->add_option("--platform", f.platform, "Only this platform (slack, discord, line, webhook)");
  cmd->add_option("--destination", f.destination, "Only this destination");
  cmd->add_option("--reason", f.reason, "Only reasons starting with this (e.g. budget:)");
}

const std::vector<std::string> kStates = {"queued",    "in_flight", "deferred",
                                          "delivered", "dead",      "cancelled"};

// The token in `path`: its first line without the line end and surrounding blanks. The file
// may hold at most 4 KiB; its content is never printed.
Result<std::string> ReadTokenFile(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return Status::InvalidArgument("--token-file " + path + ": cannot be read");
  }
  std::string text(4097, '\0');
  const size_t n = std::fread(text.data(), 1, text.size(), file);
  std::fclose(file);
  if (n > 4096) {
    return Status::InvalidArgument("--token-file " + path + ": over 4 KiB; not a token");
  }
  text.resize(n);
  text = text.substr(0, text.find_first_of("\r\n"));
  const size_t first = text.find_first_not_of(" \t");
  const size_t last = text.find_last_not_of(" \t");
  if (first == std::string::npos) {
    return Status::InvalidArgument("--token-file " + path + ": its first line is empty");
  }
  return text.substr(first, last - first + 1);
}

}  // namespace

int64_t NowMs() { return ToUnixMillis(SystemClock().WallNow()); }

int Fail(const Status& status) {
  std::fprintf(stderr, "relay-egress: %s\n", status.message().c_str());
  switch (status.code()) {
    case Status::Code::kNotFound:
    case Status::Code::kFailedPrecondition:
      return kExitNothing;
    case Status::Code::kInvalidArgument:
      return kExitUsage;
    default:
      return kExitUnavailable;
  }
}

Commands::Commands(CLI::App& app) {
  auto* deliveries = app.add_subcommand("deliveries", "Inspect, replay and cancel deliveries");
  deliveries->require_subcommand(1);
  deliveries->footer("Example:\n  relay-egress deliveries list --state dead --tenant acme");

  list_ = deliveries->add_subcommand("list", "List deliveries, oldest first");
  AddConnection(list_, flags_, true);
  list_->add_option("--state", flags_.filter.state, "Only this state")
      ->check(CLI::IsMember(kStates));
  AddFilters(list_, flags_.filter);
  list_->add_option("--since", flags_.since,
                    "Created at or after: RFC 3339, Unix ms, or an age (10m, 2h, 1d)");
  list_->add_option("--until", flags_.until, "Created before: same forms as --since");
  list_->add_option("--limit", flags_.filter.limit, "At most this many (1-1000, default 100)")
      ->check(CLI::Range(1, 1000));
  list_->add_option("--cursor", flags_.filter.cursor, "Continue after this id (from 'more:')");
  list_->footer(
      "Examples:\n  relay-egress deliveries list --state deferred --reason budget: --limit 20\n"
      "  relay-egress deliveries list --state dead --since 2h --until 2026-12-01T10:00:00Z");

  show_ = deliveries->add_subcommand("show", "Show one delivery with its attempts");
  AddConnection(show_, flags_, true);
  show_->add_option("id", flags_.ids, "Delivery id")->required()->expected(1);
  show_->footer("Example:\n  relay-egress deliveries show 01J9Z3K4ABCD --json");

  replay_ = deliveries->add_subcommand(
      "replay", "Send dead or deferred deliveries again (dead -> queued, deferred -> due now)");
  AddConnection(replay_, flags_, true);
  replay_->add_option("ids", flags_.ids, "Delivery ids");
  replay_->add_option("--state", flags_.filter.state, "Replay every match in this state")
      ->check(CLI::IsMember({"dead", "deferred"}));
  AddFilters(replay_, flags_.filter);
  replay_->add_flag("--dry-run", flags_.dry_run, "Count what would be replayed; change nothing");
  replay_->add_flag("--yes", flags_.yes, "Allow replaying more than 100 at once");
  replay_->footer(
      "Examples:\n  relay-egress deliveries replay 01J9Z3K4ABCD\n"
      "  relay-egress deliveries replay --state dead --platform slack --dry-run");

  cancel_ = deliveries->add_subcommand("cancel", "Cancel queued or deferred deliveries");
  AddConnection(cancel_, flags_, true);
  cancel_->add_option("ids", flags_.ids, "Delivery ids")->required();
  cancel_->footer("Example:\n  relay-egress deliveries cancel 01J9Z3K4ABCD 01J9Z3K4ABCE");

  stats_ = app.add_subcommand("stats", "Counts by state and the service's counters");
  AddConnection(stats_, flags_, true);
  stats_->footer("Example:\n  relay-egress stats --config /etc/relay-egress.toml --json");

  destinations_ = app.add_subcommand("destinations", "Destinations with work: state, next time");
  destinations_->require_subcommand(0, 1);
  AddConnection(destinations_, flags_, true);
  destinations_->add_option("--platform", flags_.filter.platform, "Only this platform");
  destinations_->add_option("--tenant", flags_.filter.tenant, "Only this tenant");
  destinations_->add_option("--limit", flags_.limit, "Destinations in a page (1-1000, default 100)")
      ->check(CLI::Range(1, 1000));
  destinations_->add_option("--cursor", flags_.cursor, "Go on from a page's next cursor");
  destinations_->add_flag("--all", flags_.all, "Every page, one after another");
  destinations_->add_option("--sort", flags_.sort, "key (default) or oldest_deferral")
      ->check(CLI::IsMember({"key", "oldest_deferral"}));
  destinations_->footer(
      "Examples:\n  relay-egress destinations --platform slack\n"
      "  relay-egress destinations --sort oldest_deferral --limit 20\n"
      "  relay-egress destinations --all --json\n"
      "  relay-egress destinations enable slack/acme/bot/C123");
  enable_ = destinations_->add_subcommand("enable", "Re-enable a disabled destination");
  AddConnection(enable_, flags_, true);
  enable_->add_option("key", flags_.key, "platform/tenant/credential/destination (as listed)")
      ->required();
  enable_->footer("Example:\n  relay-egress destinations enable slack/acme/bot/C123");

  top_ = app.add_subcommand(
      "top", "Live view of the running service: throughput, states, 429s, deferrals (q quits)");
  AddConnection(top_, flags_, false);
  top_->add_flag("--once", flags_.once,
                 "Print one frame (rates over one second) and exit; also when stdout is not a "
                 "terminal");
  top_->footer(
      "Examples:\n  relay-egress top --config /etc/relay-egress.toml\n"
      "  relay-egress top --once --server http://127.0.0.1:8686");

  quotas_ = app.add_subcommand(
      "quotas", "Tenants' quotas: used, limit, window, when the window is clear (docs/costs.md)");
  AddConnection(quotas_, flags_, true);
  quotas_->add_option("--tenant", flags_.filter.tenant, "Only this tenant");
  quotas_->footer("Examples:\n  relay-egress quotas\n  relay-egress quotas --tenant acme --json");

  pause_ = app.add_subcommand(
      "pause", "Stop sending to what the scope names until resumed; nothing is dropped");
  AddConnection(pause_, flags_, true);
  pause_->add_option("--tenant", flags_.filter.tenant, "Only this tenant's destinations");
  // Any platform's name: the server knows which it has (compiled-in and profile platforms).
  pause_->add_option("--platform", flags_.filter.platform, "Only this platform's");
  pause_->add_option("--credential", flags_.credential, "Only this credential's");
  pause_->add_option("--destination", flags_.filter.destination,
                     "Only this destination (as sent, or as `destinations` shows it)");
  pause_->add_option("--reason", flags_.reason, "Why, for the other operators");
  pause_->footer(
      "Examples:\n  relay-egress pause --tenant acme --platform discord --reason \"token leaked\"\n"
      "  relay-egress pause --platform line --reason \"LINE outage\"");
  resume_ = app.add_subcommand("resume", "End a pause: what it held goes, in order");
  AddConnection(resume_, flags_, true);
  resume_->add_option("id", flags_.key, "The pause's id (see `pauses`)")->required();
  resume_->footer("Example:\n  relay-egress resume pause_5f0c2a9d81e4b7c3");
  pauses_ = app.add_subcommand("pauses", "The pauses in force");
  AddConnection(pauses_, flags_, true);
  pauses_->footer("Examples:\n  relay-egress pauses\n  relay-egress pauses --json");
}

bool Commands::Parsed() const {
  for (CLI::App* c : {list_, show_, replay_, cancel_, stats_, destinations_, top_, quotas_, pause_,
                      resume_, pauses_}) {
    if (c->parsed()) {
      return true;
    }
  }
  return false;
}

int Commands::Run() {
  if (replay_->parsed()) {
    if (flags_.ids.empty() == flags_.filter.state.empty()) {
      std::fprintf(stderr, "relay-egress: deliveries replay: give ids or --state, not both%s\n",
                   flags_.ids.empty() ? " (none given)" : "");
      return kExitUsage;
    }
  }
  for (auto [flag, text, bound] : {std::tuple{"--since", &flags_.since, &flags_.filter.since_ms},
                                   std::tuple{"--until", &flags_.until, &flags_.filter.until_ms}}) {
    if (!text->empty()) {
      auto ms = ParseTimeFlag(*text, NowMs());
      if (!ms) {
        std::fprintf(stderr, "relay-egress: %s: %s\n", flag, ms.error().message().c_str());
        return kExitUsage;
      }
      *bound = *ms;
    }
  }
  StoreAccess access = StoreAccess::kReadOnly;
  if (replay_->parsed() || cancel_->parsed()) {
    access = StoreAccess::kExclusive;
  } else if (top_->parsed() || quotas_->parsed() || pause_->parsed() || resume_->parsed() ||
             pauses_->parsed()) {
    access = StoreAccess::kNone;
  }
  auto backend = Connect(flags_.connection, access);
  if (!backend) {
    return Fail(backend.error());
  }
  Backend& b = **backend;
  if (list_->parsed())
    return ListDeliveries(b, flags_);
  if (show_->parsed())
    return ShowDelivery(b, flags_);
  if (replay_->parsed())
    return ReplayDeliveries(b, flags_);
  if (cancel_->parsed())
    return CancelDeliveries(b, flags_);
  if (stats_->parsed())
    return PrintStats(b, flags_);
  if (enable_->parsed())
    return EnableDestination(b, flags_);
  if (top_->parsed())
    return Top(b, flags_);
  if (quotas_->parsed())
    return PrintQuotas(b, flags_);
  if (pause_->parsed())
    return PauseSending(b, flags_);
  if (resume_->parsed())
    return ResumeSending(b, flags_);
  if (pauses_->parsed())
    return ListPauses(b, flags_);
  return ListDestinations(b, flags_);
}

Result<std::unique_ptr<Backend>> Connect(const ConnectionFlags& flags, StoreAccess access) {
  config::Config cfg = config::DefaultConfig();
  if (!flags.config_path.empty()) {
    auto loaded = config::LoadConfig(flags.config_path, {.profiles_dir = flags.profiles_dir});
    if (!loaded) {
      return Status::InvalidArgument(loaded.error().message());
    }
    cfg = std::move(*loaded);
  }
  // --token or --token-file, then RELAY_EGRESS_TOKEN, then the admin token of the config or its
  // variable.
  std::string token = flags.token;
  if (!token.empty()) {
    std::fprintf(stderr,
                 "relay-egress: warning: --token shows the key to every user of this host (ps, "
                 "/proc); use --token-file or %s\n",
                 std::string(kTokenEnv).c_str());
  }
  if (!flags.token_file.empty()) {
    Result<std::string> read = ReadTokenFile(flags.token_file);
    if (!read) {
      return read.error();
    }
    token = std::move(*read);
  }
  if (const char* env = std::getenv(std::string(kTokenEnv).c_str());
      token.empty() && env != nullptr) {
    token = env;
  }
  if (token.empty()) {
    token = cfg.server.admin_token;
  }
  if (const char* env = std::getenv(std::string(config::kAdminTokenEnv).c_str());
      token.empty() && env != nullptr) {
    token = env;
  }
  Result<ServerUrl> url = ServerUrl{.https = false, .address = cfg.server.listen};
  if (!flags.server.empty()) {
    url = ParseServerUrl(flags.server);
  }
  if (!url) {
    return url.error();
  }
  auto service = NewServiceBackend(*url, token, flags.cacert);
  auto probe = HttpCall(*url, "GET", "/healthz", "", "", flags.cacert);
  if (probe) {
    return service;
  }
  if (probe.error().code() != Status::Code::kUnavailable) {
    return probe.error();
  }
  if (access == StoreAccess::kNone) {
    return Status::Unavailable("this command needs the running service; no service at " +
                               service->Describe() + " (" + probe.error().message() + ")");
  }
  if (cfg.store.backend == config::StoreBackend::kPostgres && flags.data_dir.empty()) {
    // Not the data directory's RocksDB store (a writable open would make an empty one there).
    return Status::Unavailable(
        "this command needs the running service: the store is "
        "PostgreSQL ([store] backend), which the CLI reads through the "
        "service only; no service at " +
        service->Describe() + " (" + probe.error().message() + ")");
  }
  const std::string dir = flags.data_dir.empty() ? cfg.server.data_dir : flags.data_dir;
  auto store = OpenStoreBackend(dir, access);
  if (!store) {
    if (store.error().code() == Status::Code::kNotFound) {
      return Status::Unavailable("no service at " + service->Describe() + " (" +
                                 probe.error().message() + ") and " + store.error().message());
    }
    if (store.error().code() == Status::Code::kBusy) {
      return Status::Busy(store.error().message() + " (no service answered at " +
                          service->Describe() + ")");
    }
    return store.error();
  }
  std::fprintf(stderr, "relay-egress: no service at %s; using %s%s\n", service->Describe().c_str(),
               (*store)->Describe().c_str(),
               access == StoreAccess::kReadOnly ? " (read-only)" : "");
  return store;
}

}  // namespace egress::cli
