#pragma once

#include <string_view>

namespace egress {

// How the service writes its event log (dispatcher/service/event_log.h): `text` lines or one
// JSON object per line; and from which level on.
enum class LogFormat { kText, kJson };
enum class LogLevel { kDebug, kInfo, kWarn, kError };

// "text" / "json"; false for anything else.
bool ParseLogFormat(std::string_view text, LogFormat& out);
// "debug" / "info" / "warn" / "error"; false for anything else.
bool ParseLogLevel(std::string_view text, LogLevel& out);

}  // namespace egress
