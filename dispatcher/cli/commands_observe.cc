// stats, destinations, destinations enable, quotas.

#include <cstdio>

#include <fmt/format.h>

#include "dispatcher/cli/cli.h"
#include "dispatcher/cli/format.h"

namespace egress::cli {
namespace {

using nlohmann::json;

std::string StateOf(const json& d) {
  if (d.value("disabled", false)) {
    return "disabled: " + FieldText(d, "disabled_reason", "?");
  }
  if (d.contains("deferral")) {
    return "deferred: " + FieldText(d, "deferral");
  }
  return "active";
}

}  // namespace

int PrintStats(Backend& b, const CommandFlags& f) {
  auto stats = b.Stats();
  if (!stats) {
    return Fail(stats.error());
  }
  if (f.json) {
    fmt::print("{}\n", stats->dump());
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows = {{"STATE", "COUNT"}};
  for (const char* s : {"queued", "in_flight", "deferred", "delivered", "dead", "cancelled"}) {
    rows.push_back({s, FieldText(*stats, s, "0")});
  }
  fmt::print("{} ({})\n{}", "deliveries by state", b.Describe(), RenderTable(rows));
  std::vector<std::vector<std::string>> counters = {{"COUNTER", "TOTAL"}};
  for (const char* c : {"accepted", "platform_429s", "throttles", "deferrals", "intake_rejections",
                        "destinations"}) {
    if (stats->contains(c)) {
      counters.push_back({c, FieldText(*stats, c)});
    }
  }
  if (counters.size() > 1) {
    fmt::print("\n{}", RenderTable(counters));
  }
  return kExitOk;
}

int PrintQuotas(Backend& b, const CommandFlags& f) {
  auto got = b.Quotas(f.filter.tenant);
  if (!got) {
    return Fail(got.error());
  }
  if (f.json) {
    fmt::print("{}\n", got->dump());
    return kExitOk;
  }
  json tenants = got->contains("tenants") ? (*got)["tenants"] : json::array({*got});
  if (!tenants.is_array()) {
    return Fail(Status::IoError("the service's quotas answer has no list of tenants"));
  }
  std::vector<std::vector<std::string>> rows = {
      {"TENANT", "TIER", "QUOTA", "USED", "LIMIT", "WINDOW", "PLATFORMS", "CLEAR IN"}};
  for (const json& t : tenants) {
    if (!t.is_object() || !t.contains("quotas") || !t["quotas"].is_object()) {
      continue;
    }
    for (const auto& [name, q] : t["quotas"].items()) {
      std::string platforms = "all";
      if (q.contains("platforms") && q["platforms"].is_array() && !q["platforms"].empty()) {
        platforms.clear();
        for (const json& p : q["platforms"]) {
          platforms +=
              (platforms.empty() ? "" : ",") + (p.is_string() ? p.get<std::string>() : "?");
        }
      }
      const int64_t resets = FieldInt(q, "resets_in_ms");
      rows.push_back({FieldText(t, "tenant"), FieldText(t, "tier", "-"), name, FieldText(q, "used"),
                      FieldText(q, "limit"), FieldText(q, "window"), platforms,
                      resets > 0 ? fmt::format("{}s", (resets + 999) / 1000) : "-"});
    }
  }
  if (rows.size() == 1) {
    fmt::print("no quotas ({})\n", b.Describe());
    return kExitOk;
  }
  fmt::print("{}", RenderTable(rows));
  return kExitOk;
}

int ListDestinations(Backend& b, const CommandFlags& f) {
  DestinationsQuery query{.platform = f.filter.platform,
                          .tenant = f.filter.tenant,
                          .sort = f.sort,
                          .cursor = f.cursor,
                          .limit = f.limit};
  json list = json::array();
  std::string next;
  // One page, or with --all every page (each a bounded call to the service).
  do {
    auto got = b.Destinations(query);
    if (!got) {
      return Fail(got.error());
    }
    for (json& d : (*got)["destinations"]) {
      list.push_back(std::move(d));
    }
    const json& cursor = (*got)["next_cursor"];
    next = cursor.is_string() ? cursor.get<std::string>() : "";
    query.cursor = next;
  } while (f.all && !next.empty());
  if (!next.empty()) {
    std::fprintf(stderr, "relay-egress: more destinations: --cursor %s (or --all)\n", next.c_str());
  }
  if (f.json) {
    for (json d : list) {
      d["ref"] = DestinationRef(FieldText(d, "key", ""));
      fmt::print("{}\n", d.dump());
    }
  } else if (!list.empty()) {
    const int64_t now = NowMs();
    std::vector<std::vector<std::string>> rows = {
        {"DESTINATION", "STATE", "NEXT", "QUEUED", "DEFERRED", "IN-FLIGHT", "LAST RESPONSE"}};
    for (const json& d : list) {
      rows.push_back({Truncate(DestinationRef(FieldText(d, "key", "")), 48), StateOf(d),
                      RelativeTime(FieldInt(d, "next_eligible_ms"), now), FieldText(d, "queued"),
                      FieldText(d, "deferred"), FieldText(d, "in_flight"),
                      RelativeTime(FieldInt(d, "last_response_ms"), now)});
    }
    fmt::print("{}", RenderTable(rows));
  }
  if (list.empty()) {
    // An empty list is an answer, not a failure (docs/cli.md, "Exit codes").
    std::fprintf(stderr, "relay-egress: no destinations with work (%s)\n", b.Describe().c_str());
    return kExitOk;
  }
  return kExitOk;
}

int EnableDestination(Backend& b, const CommandFlags& f) {
  const std::string key = ParseDestinationRef(f.key);
  if (key.empty()) {
    std::fprintf(stderr,
                 "relay-egress: destinations enable: '%s' is not "
                 "platform/tenant/credential/destination\n",
                 f.key.c_str());
    return kExitUsage;
  }
  auto done = b.Enable(key);
  if (!done) {
    return Fail(done.error());
  }
  f.json ? fmt::print("{}\n", json{{"ref", f.key}, {"enabled", true}}.dump())
         : fmt::print("enabled {}\n", DestinationRef(key));
  return kExitOk;
}

}  // namespace egress::cli
