#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "dispatcher/base/log_options.h"

namespace egress::service {

// Sets up the process's event log on stderr (spdlog). Until it is called, events go to stderr
// as text at info level. Call once at start-up, before the loop runs.
void ConfigureEventLog(LogFormat format, LogLevel level);

// Whether an event at `level` would be written: lets a hot path skip building its fields.
bool LogEnabled(LogLevel level);

// Logs one event: a snake_case name and its fields. Text: `2026-12-01T10:00:00.123Z info
// destination_disabled key="..." reason="..."`; JSON: one object per line,
// `{"ts":"...","level":"info","event":"destination_disabled","key":"...","reason":"..."}`.
// Never pass a secret (token, signing secret) as a field. Thread-safe.
void LogEvent(LogLevel level, std::string_view event, const nlohmann::json& fields = nullptr);

}  // namespace egress::service
