#pragma once

#include <string_view>
#include <vector>

namespace egress::config {

// The text of the shipped profile `name` ("slack", "discord", "line", "webhook", and the profile
// platforms': the files config/profiles/<name>.toml), compiled into the
// binary at build time (config/embed_profiles.cmake) so that a config file needs no profiles/
// directory beside it. Empty for any other name.
std::string_view BuiltinProfile(std::string_view name);

// The names of the shipped profiles, sorted.
std::vector<std::string_view> BuiltinProfileNames();

}  // namespace egress::config
