#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace egress {

// `gz` inflated with zlib as one gzip member, as an HTTP client inflates an answer sent with
// Content-Encoding: gzip; nullopt when it is not one whole member (a bad header or checksum,
// cut short, or bytes after it).
std::optional<std::string> Gunzip(std::string_view gz);

}  // namespace egress
