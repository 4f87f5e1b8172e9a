#pragma once

#include <string_view>

namespace egress::config {

// The text of the shipped profile `name` ("slack", "discord", "line", "webhook": the files
// config/profiles/<name>.toml), compiled into the binary at build time
// (config/embed_profiles.cmake) so that a config file needs no profiles/ directory beside it. Empty
// for any other name.
std::string_view BuiltinProfile(std::string_view name);

}  // namespace egress::config
