// pause, resume, pauses: an operator's pauses (docs/api.md, "Pauses"), through the service.

#include <cstdio>

#include <fmt/format.h>

#include "dispatcher/cli/cli.h"
#include "dispatcher/cli/format.h"

namespace egress::cli {
namespace {

using nlohmann::json;

// "tenant acme, platform discord": the scope fields a pause sets.
std::string ScopeText(const json& p) {
  std::string text;
  for (const char* field : {"tenant", "platform", "credential", "destination"}) {
    const std::string value = FieldText(p, field, "");
    if (!value.empty()) {
      text += fmt::format("{}{} {}", text.empty() ? "" : ", ", field, value);
    }
  }
  return text;
}

}  // namespace

int PauseSending(Backend& b, const CommandFlags& f) {
  json scope = json::object();
  for (const auto& [field, value] :
       {std::pair{"tenant", &f.filter.tenant}, std::pair{"platform", &f.filter.platform},
        std::pair{"credential", &f.credential}, std::pair{"destination", &f.filter.destination},
        std::pair{"reason", &f.reason}}) {
    if (!value->empty()) {
      scope[field] = *value;
    }
  }
  if (!scope.contains("tenant") && !scope.contains("platform") && !scope.contains("credential") &&
      !scope.contains("destination")) {
    std::fprintf(stderr,
                 "relay-egress: pause: name what to pause: --tenant, --platform, --credential "
                 "or --destination\n");
    return kExitUsage;
  }
  auto done = b.Pause(scope);
  if (!done) {
    return Fail(done.error());
  }
  f.json ? fmt::print("{}\n", done->dump())
         : fmt::print("paused {} ({}); resume with: relay-egress resume {}\n",
                      FieldText(*done, "id"), ScopeText(*done), FieldText(*done, "id"));
  return kExitOk;
}

int ResumeSending(Backend& b, const CommandFlags& f) {
  auto done = b.Resume(f.key);
  if (!done) {
    return Fail(done.error());
  }
  f.json ? fmt::print("{}\n", done->dump())
         : fmt::print("resumed {} ({})\n", FieldText(*done, "id"), ScopeText(*done));
  return kExitOk;
}

int ListPauses(Backend& b, const CommandFlags& f) {
  auto got = b.Pauses();
  if (!got) {
    return Fail(got.error());
  }
  if (f.json) {
    fmt::print("{}\n", got->dump());
    return kExitOk;
  }
  const json& list = got->contains("pauses") ? (*got)["pauses"] : json();
  if (!list.is_array()) {
    return Fail(Status::IoError("the service's pauses answer has no list of pauses"));
  }
  std::vector<std::vector<std::string>> rows = {
      {"ID", "TENANT", "PLATFORM", "CREDENTIAL", "DESTINATION", "SINCE", "REASON"}};
  const int64_t now_ms = NowMs();
  for (const json& p : list) {
    rows.push_back({FieldText(p, "id"), FieldText(p, "tenant", "any"),
                    FieldText(p, "platform", "any"), FieldText(p, "credential", "any"),
                    Truncate(FieldText(p, "destination", "any"), 48),
                    RelativeTime(FieldInt(p, "created_ms"), now_ms),
                    Truncate(FieldText(p, "reason", ""), 60)});
  }
  if (rows.size() == 1) {
    fmt::print("no pauses ({})\n", b.Describe());
    return kExitOk;
  }
  fmt::print("{}", RenderTable(rows));
  return kExitOk;
}

}  // namespace egress::cli
