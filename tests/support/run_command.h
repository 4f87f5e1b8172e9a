#pragma once

#include <string>
#include <vector>

namespace egress {

// What a finished program printed and how it exited.
struct CommandOutput {
  int exit_code = -1;  // -1: it did not exit normally
  std::string out;
  std::string err;
  // stdout split into lines (no empty last line).
  std::vector<std::string> Lines() const;
};

// Runs `path args...` to completion with stdin from /dev/null, capturing stdout and stderr.
CommandOutput RunCommand(const std::string& path, const std::vector<std::string>& args);

}  // namespace egress
