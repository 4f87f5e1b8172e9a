#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "dispatcher/cli/backend.h"

namespace egress::cli {

// Exit codes of every operator command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitNothing = 1;      // nothing found or matched
inline constexpr int kExitUsage = 2;        // usage error
inline constexpr int kExitUnavailable = 3;  // service unreachable and store busy or missing

// The environment variable the CLI reads its token from when --token is not given.
inline constexpr std::string_view kTokenEnv = "RELAY_EGRESS_TOKEN";

// How to reach the service or the store, shared by every command.
struct ConnectionFlags {
  std::string config_path;
  std::string profiles_dir;
  std::string server;
  std::string data_dir;
  // --token: a tenant's API key or the admin token, sent as Authorization: Bearer. Every user of
  // the host sees it in the process list, so it is warned about: prefer --token-file or
  // RELAY_EGRESS_TOKEN. Default: the file, else RELAY_EGRESS_TOKEN, else the config's
  // admin_token (or RELAY_EGRESS_ADMIN_TOKEN).
  std::string token;
  // --token-file: a file holding the token (its first line; at most 4 KiB).
  std::string token_file;
  // --cacert: the CA certificates (PEM) an https --server is verified with. Default: the
  // system's.
  std::string cacert;
};

// Everything the command line said.
struct CommandFlags {
  ConnectionFlags connection;
  bool json = false;
  DeliveryFilter filter;
  std::string since;  // --since/--until as typed; Run parses them into filter
  std::string until;
  std::vector<std::string> ids;
  bool dry_run = false;
  bool yes = false;
  std::string key;
  bool once = false;  // top --once
  // destinations: a page (--limit, --cursor), every page (--all), the order (--sort).
  int limit = 0;
  std::string cursor;
  bool all = false;
  std::string sort;
  // pause: the scope and the note.
  std::string credential;
  std::string reason;
};

// The operator commands (docs/cli.md): `deliveries list|show|replay|cancel`, `stats`,
// `destinations [enable]`, `top`, `quotas`, `pause`, `resume`, `pauses`. Register on the app before
// parsing; Run after, when Parsed().
class Commands {
 public:
  explicit Commands(CLI::App& app);
  bool Parsed() const;
  int Run();

 private:
  CommandFlags flags_;
  CLI::App* list_ = nullptr;
  CLI::App* show_ = nullptr;
  CLI::App* replay_ = nullptr;
  CLI::App* cancel_ = nullptr;
  CLI::App* stats_ = nullptr;
  CLI::App* destinations_ = nullptr;
  CLI::App* enable_ = nullptr;
  CLI::App* top_ = nullptr;
  CLI::App* quotas_ = nullptr;
  CLI::App* pause_ = nullptr;
  CLI::App* resume_ = nullptr;
  CLI::App* pauses_ = nullptr;
};

// The exit code for an error, printed to stderr as "relay-egress: message".
int Fail(const Status& status);

// The service at --server (default http:// + the config's listen) when it answers, otherwise
// the store at --data-dir (default the config's data_dir) opened as `access` says. Errors:
// InvalidArgument for a bad config or URL; Unavailable or Busy when neither can be used.
Result<std::unique_ptr<Backend>> Connect(const ConnectionFlags& flags, StoreAccess access);

// The commands, in commands_*.cc. Each returns an exit code.
int ListDeliveries(Backend& b, const CommandFlags& f);
int ShowDelivery(Backend& b, const CommandFlags& f);
int ReplayDeliveries(Backend& b, const CommandFlags& f);
int CancelDeliveries(Backend& b, const CommandFlags& f);
int PrintStats(Backend& b, const CommandFlags& f);
int ListDestinations(Backend& b, const CommandFlags& f);
int EnableDestination(Backend& b, const CommandFlags& f);
int Top(Backend& b, const CommandFlags& f);  // commands_top.cc
int PrintQuotas(Backend& b, const CommandFlags& f);
int PauseSending(Backend& b, const CommandFlags& f);  // commands_pauses.cc
int ResumeSending(Backend& b, const CommandFlags& f);
int ListPauses(Backend& b, const CommandFlags& f);

// Wall clock now, Unix ms (for relative times).
int64_t NowMs();

}  // namespace egress::cli
