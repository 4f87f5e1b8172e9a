#pragma once

#include <string>

namespace egress {

// The repository's root directory (absolute), as CMake configured it: tests read the shipped
// config and profiles from there.
std::string SourceRoot();

}  // namespace egress
