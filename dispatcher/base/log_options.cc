#include "dispatcher/base/log_options.h"

namespace egress {

bool ParseLogFormat(std::string_view text, LogFormat& out) {
  if (text == "text") {
    out = LogFormat::kText;
  } else if (text == "json") {
    out = LogFormat::kJson;
  } else {
    return false;
  }
  return true;
}

bool ParseLogLevel(std::string_view text, LogLevel& out) {
  if (text == "debug") {
    out = LogLevel::kDebug;
  } else if (text == "info") {
    out = LogLevel::kInfo;
  } else if (text == "warn") {
    out = LogLevel::kWarn;
  } else if (text == "error") {
    out = LogLevel::kError;
  } else {
    return false;
  }
  return true;
}

}  // namespace egress
