// deliveries list | show | replay | cancel.

#include <unistd.h>

#include <cstdio>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "dispatcher/cli/cli.h"
#include "dispatcher/cli/format.h"
#include "storage/delivery.h"
#include "storage/operator_actions.h"

namespace egress::cli {
namespace {

using nlohmann::json;

constexpr size_t kReplayWithoutYes = 100;

// When it is due (waiting) or when it last changed.
std::string When(const json& d, int64_t now_ms) {
  if (d.contains("next_attempt_ms")) {
    return "due " + RelativeTime(FieldInt(d, "next_attempt_ms"), now_ms);
  }
  return "updated " + RelativeTime(FieldInt(d, "updated_ms"), now_ms);
}

// Invalid UTF-8 (an id typed on the command line) prints as U+FFFD rather than throwing.
void PrintLine(const json& j) {
  fmt::print("{}\n", j.dump(-1, ' ', false, json::error_handler_t::replace));
}

// `d` (a delivery as Get answers it) when a replay would take it, else why not: the store's
// refusal, or IoError when the answer names no state.
Result<json> Replayable(const std::string& id, json&& d) {
  const std::string state = FieldText(d, "state", "");
  const std::optional<storage::DeliveryState> parsed = storage::ParseState(state);
  if (!parsed) {
    return Status::IoError(fmt::format("delivery {}: unknown state '{}' in the answer", id, state));
  }
  if (Status s = storage::CheckReplayable(id, *parsed); !s.ok()) {
    return s;
  }
  return std::move(d);
}

}  // namespace

int ListDeliveries(Backend& b, const CommandFlags& f) {
  auto page = b.List(f.filter);
  if (!page) {
    return Fail(page.error());
  }
  const json& list = (*page)["deliveries"];
  const std::string cursor = FieldText(*page, "next_cursor", "");
  if (f.json) {
    for (const json& d : list) {
      PrintLine(d);
    }
    if (!cursor.empty()) {
      PrintLine({{"next_cursor", cursor}});
    }
  } else if (!list.empty()) {
    const int64_t now = NowMs();
    std::vector<std::vector<std::string>> rows = {
        {"ID", "STATE", "TENANT", "PLATFORM", "DESTINATION", "ATTEMPTS", "WHEN", "REASON"}};
    for (const json& d : list) {
      rows.push_back({FieldText(d, "id", ""), FieldText(d, "state", ""), FieldText(d, "tenant", ""),
                      FieldText(d, "platform", ""), Truncate(FieldText(d, "destination", ""), 40),
                      FieldText(d, "attempts", ""), When(d, now), FieldText(d, "reason", "")});
    }
    fmt::print("{}", RenderTable(rows));
    if (!cursor.empty()) {
      fmt::print("more: --cursor {}\n", cursor);
    }
  }
  if (list.empty()) {
    // An empty list is an answer, not a failure (docs/cli.md, "Exit codes").
    std::fprintf(stderr, "relay-egress: no deliveries match (%s)\n", b.Describe().c_str());
    return kExitOk;
  }
  return kExitOk;
}

int ShowDelivery(Backend& b, const CommandFlags& f) {
  auto d = b.Get(f.ids.front());
  if (!d) {
    return Fail(d.error());
  }
  if (f.json) {
    PrintLine(*d);
    return kExitOk;
  }
  const int64_t now = NowMs();
  std::vector<std::vector<std::string>> fields = {
      {"id:", FieldText(*d, "id", "")},
      {"state:", FieldText(*d, "state", "")},
      {"tenant:", FieldText(*d, "tenant", "")},
      {"platform:", FieldText(*d, "platform", "")},
      {"destination:", FieldText(*d, "destination", "")},
      {"credential:", FieldText(*d, "credential", "")},
      {"attempts:", FieldText(*d, "attempts", "")},
      {"created:", RelativeTime(FieldInt(*d, "created_ms"), now)},
      {"updated:", RelativeTime(FieldInt(*d, "updated_ms"), now)}};
  if (d->contains("next_attempt_ms")) {
    fields.push_back({"next attempt:", RelativeTime(FieldInt(*d, "next_attempt_ms"), now)});
  }
  if (d->contains("reason")) {
    fields.push_back({"reason:", FieldText(*d, "reason", "")});
  }
  for (const char* key : {"idempotency_key", "ordering_key"}) {
    if (d->contains(key)) {
      fields.push_back({std::string(key) + ":", FieldText(*d, key, "")});
    }
  }
  if (d->contains("payload")) {
    fields.push_back({"payload:", Truncate((*d)["payload"].dump(), 200)});
  }
  fmt::print("{}", RenderTable(fields));
  const json& history = (*d)["attempts_history"];
  if (history.is_array() && !history.empty()) {
    std::vector<std::vector<std::string>> rows = {
        {"AT", "HTTP", "TOOK", "ERROR", "DETAIL", "RATE-LIMIT HEADERS"}};
    for (const json& a : history) {
      std::string headers;
      for (const auto& [name, value] : a["rate_limit_headers"].items()) {
        headers += (headers.empty() ? "" : " ") + name + "=" + value.get<std::string>();
      }
      rows.push_back({RelativeTime(FieldInt(a, "at_ms"), now), FieldText(a, "http_status", ""),
                      FieldText(a, "duration_ms", "") + "ms", FieldText(a, "platform_error", ""),
                      Truncate(FieldText(a, "detail", ""), 40), headers});
    }
    fmt::print("\n{}", RenderTable(rows));
  }
  return kExitOk;
}

int ReplayDeliveries(Backend& b, const CommandFlags& f) {
  if (!f.ids.empty()) {
    int code = kExitOk;
    for (const std::string& id : f.ids) {
      Result<json> done = f.dry_run ? b.Get(id) : b.Replay(id);
      if (done && f.dry_run) {
        done = Replayable(id, std::move(*done));
      }
      if (!done) {
        code = Fail(done.error());
        continue;
      }
      if (f.json) {
        PrintLine({{"id", id},
                   {"state", f.dry_run ? FieldText(*done, "state", "") : "queued"},
                   {"dry_run", f.dry_run}});
      } else {
        fmt::print("{} {}\n", f.dry_run ? "would replay" : "replayed", id);
      }
    }
    return code;
  }
  auto counted = b.ReplayMatching(f.filter, true);
  if (!counted) {
    return Fail(counted.error());
  }
  const size_t matched = (*counted)["matched"].get<size_t>();
  if (matched == 0) {
    std::fprintf(stderr, "relay-egress: no %s deliveries match\n", f.filter.state.c_str());
    return kExitNothing;
  }
  if (f.dry_run) {
    f.json ? PrintLine(*counted) : fmt::print("would replay {} deliveries\n", matched);
    return kExitOk;
  }
  if (matched > kReplayWithoutYes && !f.yes) {
    std::fprintf(stderr,
                 "relay-egress: %zu deliveries match; replaying more than %zu at once needs "
                 "--yes\n",
                 matched, kReplayWithoutYes);
    return kExitUsage;
  }
  // On a terminal, a bar on stderr redrawn after each slice; otherwise silence until the end.
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  ReplayProgress progress;
  if (tty) {
    progress = [matched](uint64_t m, uint64_t r) {
      std::fprintf(stderr, "\r%s", ReplayProgressLine(m, r, matched).c_str());
      std::fflush(stderr);
    };
  }
  auto done = b.ReplayMatching(f.filter, false, progress);
  if (tty) {
    std::fputc('\n', stderr);
  }
  if (!done) {
    return Fail(done.error());
  }
  if (f.json) {
    PrintLine(*done);
  } else {
    fmt::print("replayed {} of {} matched deliveries\n", (*done)["replayed"].get<size_t>(),
               (*done)["matched"].get<size_t>());
  }
  return (*done)["replayed"].get<size_t>() > 0 ? kExitOk : kExitNothing;
}

int CancelDeliveries(Backend& b, const CommandFlags& f) {
  int code = kExitOk;
  for (const std::string& id : f.ids) {
    auto done = b.Cancel(id);
    if (!done) {
      code = Fail(done.error());
      continue;
    }
    f.json ? PrintLine(*done) : fmt::print("cancelled {}\n", id);
  }
  return code;
}

}  // namespace egress::cli
