#include "tests/simulator/config_file.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <toml++/toml.h>

namespace egress::sim {

Result<std::string> LoadConfigFile(const std::string& path) {
  const bool is_toml = path.size() > 5 && path.compare(path.size() - 5, 5, ".toml") == 0;
  if (!is_toml) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      return Status::IoError("cannot read " + path);
    }
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }
  // Debian's toml++ is built with exceptions: convert at this edge.
  try {
    toml::table table = toml::parse_file(path);
    std::ostringstream json;
    json << toml::json_formatter{table};
    return json.str();
  } catch (const toml::parse_error& err) {
    if (err.source().begin.line == 0) {
      return Status::IoError(fmt::format("{}: {}", path, err.description()));
    }
    return Status::InvalidArgument(
        fmt::format("{}:{}: {}", path, err.source().begin.line, err.description()));
  }
}

}  // namespace egress::sim
