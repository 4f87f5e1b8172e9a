#include "dispatcher/service/event_log.h"

#include <atomic>
#include <memory>
#include <string>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "dispatcher/base/redact.h"

namespace egress::service {
namespace {

std::atomic<LogFormat> g_format{LogFormat::kText};

spdlog::logger& Logger() {
  // Built on first use; ConfigureEventLog replaces its pattern and level.
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = std::make_shared<spdlog::logger>("relay-egress",
                                              std::make_shared<spdlog::sinks::stderr_sink_mt>());
    l->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %l %v", spdlog::pattern_time_type::utc);
    l->set_level(spdlog::level::info);
    l->flush_on(spdlog::level::trace);  // one line per event, never held back
    return l;
  }();
  return *logger;
}

spdlog::level::level_enum ToSpd(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return spdlog::level::debug;
    case LogLevel::kInfo:
      return spdlog::level::info;
    case LogLevel::kWarn:
      return spdlog::level::warn;
    case LogLevel::kError:
      return spdlog::level::err;
  }
  return spdlog::level::info;
}

// Every string of a field, through the redaction layer: no URL secret, no raw control byte.
nlohmann::json Redacted(const nlohmann::json& value) {
  if (value.is_string()) {
    return RedactText(value.get_ref<const std::string&>());
  }
  if (value.is_structured()) {
    nlohmann::json out = value;
    for (auto& item : out) {
      item = Redacted(item);
    }
    return out;
  }
  return value;
}

// A field: a destination (or destination key) is redacted as one whole URL (RedactDestination),
// every other through Redacted.
nlohmann::json RedactedField(const std::string& key, const nlohmann::json& value) {
  if (key == "destination" && value.is_string()) {
    return DestinationKeyText(value.get_ref<const std::string&>());
  }
  return Redacted(value);
}

// A text field: bare when it is a number, a boolean or a simple word; JSON-quoted otherwise.
void AppendText(std::string& out, const std::string& key, const nlohmann::json& value) {
  out.push_back(' ');
  out.append(key);
  out.push_back('=');
  if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    const bool simple = !s.empty() && s.find_first_of(" \"=\\\n\t") == std::string::npos;
    out.append(simple ? s : value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  } else {
    out.append(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
}

}  // namespace

void ConfigureEventLog(LogFormat format, LogLevel level) {
  spdlog::logger& logger = Logger();
  g_format = format;
  // JSON: spdlog writes the time and level; the event and its fields are the rest of the
  // object, already escaped by nlohmann::json.
  logger.set_pattern(format == LogFormat::kJson
                         ? R"({"ts":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l",%v})"
                         : "%Y-%m-%dT%H:%M:%S.%eZ %l %v",
                     spdlog::pattern_time_type::utc);
  logger.set_level(ToSpd(level));
}

bool LogEnabled(LogLevel level) { return Logger().should_log(ToSpd(level)); }

void LogEvent(LogLevel level, std::string_view event, const nlohmann::json& fields) {
  spdlog::logger& logger = Logger();
  const spdlog::level::level_enum spd = ToSpd(level);
  if (!logger.should_log(spd)) {
    return;
  }
  std::string line;
  if (g_format == LogFormat::kJson) {
    line = "\"event\":" + nlohmann::json(event).dump();
    if (fields.is_object()) {
      for (const auto& [key, value] : fields.items()) {
        line += "," + nlohmann::json(RedactText(key)).dump() + ":" +
                RedactedField(key, value)
                    .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      }
    }
  } else {
    line.assign(event);
    if (fields.is_object()) {
      for (const auto& [key, value] : fields.items()) {
        AppendText(line, RedactText(key), RedactedField(key, value));
      }
    }
  }
  logger.log(spd, "{}", line);
}

}  // namespace egress::service
