#pragma once

// The operator console's static files (docs/console.md), compiled into the binary: CMake turns
// every file of dispatcher/service/console/ into a byte array at build time
// (dispatcher/service/console/embed_console.cmake), so `serve` needs no files on disk and the
// console cannot drift from the service it ships with.

#include <span>
#include <string_view>

namespace egress::service {

struct ConsoleAsset {
  std::string_view path;          // relative to the console folder: "index.html", "js/api.js"
  std::string_view content_type;  // from the extension: "text/javascript; charset=utf-8", ...
  std::string_view body;          // the file's bytes; static storage
};

// Every file of the console, sorted by path. Generated (console_assets_data.cc in the build).
std::span<const ConsoleAsset> ConsoleAssets();

}  // namespace egress::service
