#include "tests/simulator/http_date_format.h"

#include <time.h>

#include <chrono>

namespace egress::sim {

std::string FormatHttpDate(WallTime t) {
  static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  time_t secs = std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
  struct tm tm {};
  gmtime_r(&secs, &tm);
  char buf[40];
  snprintf(buf, sizeof buf, "%s, %02d %s %04d %02d:%02d:%02d GMT", kDays[tm.tm_wday], tm.tm_mday,
           kMonths[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

}  // namespace egress::sim
