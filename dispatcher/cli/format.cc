#include "dispatcher/cli/format.h"

#include <algorithm>

#include <fmt/format.h>

#include "dispatcher/base/redact.h"
#include "storage/delivery.h"

namespace egress::cli {
namespace {

// "12s", "3m", "2h5m", "4d3h".
std::string Span(int64_t ms) {
  const int64_t s = ms / 1000;
  if (s < 60) {
    return fmt::format("{}s", s);
  }
  if (s < 3600) {
    return fmt::format("{}m", s / 60);
  }
  if (s < 86400) {
    const int64_t m = (s % 3600) / 60;
    return m == 0 ? fmt::format("{}h", s / 3600) : fmt::format("{}h{}m", s / 3600, m);
  }
  const int64_t h = (s % 86400) / 3600;
  return h == 0 ? fmt::format("{}d", s / 86400) : fmt::format("{}d{}h", s / 86400, h);
}

}  // namespace

std::string RelativeTime(int64_t at_ms, int64_t now_ms) {
  if (at_ms == 0) {
    return "-";
  }
  const int64_t delta = at_ms - now_ms;
  if (delta > -1000 && delta < 1000) {
    return "now";
  }
  return delta > 0 ? "in " + Span(delta) : Span(-delta) + " ago";
}

std::string FieldText(const nlohmann::json& j, const char* key, const char* missing) {
  if (!j.is_object()) {
    return missing;
  }
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    return missing;
  }
  return it->is_string() ? it->get<std::string>() : it->dump();
}

int64_t FieldInt(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) {
    return 0;
  }
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

std::string RenderTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (size_t i = 0; i < row.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) {
        line.append(widths[i] - row[i].size() + 2, ' ');
      }
    }
    while (!line.empty() && line.back() == ' ') {
      line.pop_back();
    }
    out += line + "\n";
  }
  return out;
}

std::string Truncate(const std::string& text, size_t width) {
  if (text.size() <= width) {
    return text;
  }
  if (width <= 3) {
    return text.substr(0, width);
  }
  return text.substr(0, width - 3) + "...";
}

std::string DestinationRef(const std::string& key) { return DestinationKeyText(key); }

std::string ParseDestinationRef(const std::string& ref) {
  storage::DestinationParts parts;
  if (storage::SplitDestinationKey(ref, parts)) {
    return ref;
  }
  // platform/tenant/credential/the rest (a webhook URL may contain '/').
  size_t pos = 0;
  std::string fields[3];
  for (auto& f : fields) {
    const size_t slash = ref.find('/', pos);
    if (slash == std::string::npos) {
      return "";
    }
    f = ref.substr(pos, slash - pos);
    pos = slash + 1;
  }
  if (pos >= ref.size()) {
    return "";
  }
  return storage::DestinationKeyOf(fields[0], fields[1], fields[2], ref.substr(pos));
}

std::string ReplayProgressLine(uint64_t matched, uint64_t replayed, uint64_t total, size_t width) {
  width = std::max<size_t>(width, 1);
  const size_t filled =
      total == 0 ? width : static_cast<size_t>(std::min<uint64_t>(matched, total) * width / total);
  return fmt::format("[{}{}] {:>{}}/{} matched  {} replayed", std::string(filled, '#'),
                     std::string(width - filled, '-'), matched, std::to_string(total).size(), total,
                     replayed);
}

}  // namespace egress::cli
