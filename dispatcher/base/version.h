#pragma once

#include <string_view>

namespace egress {

// The version of this build: the CMake project version, then `git describe --always --dirty` of
// the source tree in parentheses when it was a git checkout at configure time, e.g.
// "0.1.0 (05d132a-dirty)". Used by `relay-egress --version`.
std::string_view Version();

// The CMake project version alone, e.g. "0.1.0".
std::string_view VersionNumber();

}  // namespace egress
