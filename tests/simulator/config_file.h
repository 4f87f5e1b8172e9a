#pragma once

#include <string>

#include "dispatcher/base/result.h"

namespace egress::sim {

// Reads a simulator config file and returns it as JSON text. A name ending in ".toml" is read as
// TOML (same keys and nesting as the JSON form), anything else as JSON. IoError when the file
// cannot be read; InvalidArgument for TOML syntax errors (JSON is checked by ParseSimConfig).
Result<std::string> LoadConfigFile(const std::string& path);

}  // namespace egress::sim
