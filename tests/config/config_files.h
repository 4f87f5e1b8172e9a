#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "config/load_config.h"
#include "tests/support/child_process.h"
#include "tests/support/temp_dir.h"

namespace egress::config {

// The repository root (tests/support/child_process.h finds it even when ccache made __FILE__
// relative).
inline std::string SourceRootForTest() { return SourceDir(); }

// A main config file and a profiles/ directory beside it, in a fresh temp dir. The four
// profiles start empty, so only built-in defaults and what a test writes apply.
class ConfigFiles {
 public:
  ConfigFiles() {
    std::filesystem::create_directories(dir_.Sub("profiles"));
    for (const char* name : {"slack", "discord", "line", "webhook"}) {
      WriteProfile(name, "");
    }
  }

  // Loads with the profiles of dir()/profiles and the environment `env` only.
  LoadOptions Options(std::map<std::string, std::string> env = {}) const {
    LoadOptions options;
    options.profiles_dir = dir_.Sub("profiles");
    options.environment = [env]() { return Environment(env.begin(), env.end()); };
    options.getenv = [env = std::move(env)](std::string_view name) -> std::optional<std::string> {
      auto it = env.find(std::string(name));
      if (it == env.end()) {
        return std::nullopt;
      }
      return it->second;
    };
    return options;
  }

  std::string main_path() const { return dir_.Sub("relay-egress.toml"); }
  std::string profile_path(std::string_view platform) const {
    return dir_.Sub("profiles/" + std::string(platform) + ".toml");
  }
  const TempDir& dir() const { return dir_; }

  void WriteProfile(std::string_view platform, const std::string& text) const {
    Write(profile_path(platform), text);
  }
  static void Write(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  }

  // Writes the main file and loads it with a fixed environment (nothing set unless given).
  Result<Config> Load(const std::string& main_text,
                      std::map<std::string, std::string> env = {}) const {
    Write(main_path(), main_text);
    return LoadConfig(main_path(), Options(std::move(env)));
  }

 private:
  TempDir dir_;
};

}  // namespace egress::config
