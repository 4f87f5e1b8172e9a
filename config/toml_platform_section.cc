#include <fmt/format.h>

#include "config/toml_sections.h"

namespace egress::config {
namespace {

// An absolute http(s) URL with a host; no path checks (a simulator may sit under a prefix).
bool LooksLikeBaseUrl(std::string_view url) {
  for (std::string_view scheme : {"https://", "http://"}) {
    if (url.substr(0, scheme.size()) == scheme) {
      const std::string_view rest = url.substr(scheme.size());
      return !rest.empty() && rest.front() != '/' &&
             rest.find_first_of(" \t\r\n") == std::string_view::npos;
    }
  }
  return false;
}

Status ReadRetry(const TomlFields& retry, pacing::RetryPolicy& out) {
  Status status = retry.CheckKeys(
      {"schedule", "max_attempts", "max_age", "base_backoff", "max_backoff", "throttle_wait"});
  if (!status.ok()) {
    return status;
  }
  int64_t attempts = out.max_attempts;
  if (status = retry.ReadDurationList("schedule", out.schedule); !status.ok()) {
    return status;
  }
  if (status = retry.ReadInt("max_attempts", 1, 1000, attempts); !status.ok()) {
    return status;
  }
  out.max_attempts = static_cast<int>(attempts);
  if (status = retry.ReadDuration("max_age", false, out.max_age); !status.ok()) {
    return status;
  }
  if (status = retry.ReadDuration("base_backoff", false, out.base_backoff); !status.ok()) {
    return status;
  }
  if (status = retry.ReadDuration("max_backoff", false, out.max_backoff); !status.ok()) {
    return status;
  }
  return retry.ReadDuration("throttle_wait", false, out.throttle_wait);
}

Status ReadPlatform(const TomlFields& fields, Platform platform, PlatformConfig& out) {
  const bool profile = static_cast<int>(platform) >= kBuiltinPlatformCount;
  Status status =
      platform == Platform::kWebhook
          ? fields.CheckKeys({"allow_private_networks", "connect_timeout", "timeout",
                              "max_in_flight_per_destination", "max_in_flight_per_platform",
                              "retry", "ca_file", "ca_path"})
      : profile ? fields.CheckKeys({"base_url", "connect_timeout", "timeout",
                                    "max_in_flight_per_destination", "max_in_flight_per_platform",
                                    "retry", "ca_file", "ca_path", "request", "auth", "oauth2",
                                    "response", "rules", "scopes"})
                : fields.CheckKeys({"base_url", "connect_timeout", "timeout",
                                    "max_in_flight_per_destination", "max_in_flight_per_platform",
                                    "retry", "ca_file", "ca_path"});
  if (!status.ok()) {
    return status;
  }
  if (status = fields.ReadString("base_url", out.base_url); !status.ok()) {
    return status;
  }
  if (fields.Has("base_url") && !LooksLikeBaseUrl(out.base_url)) {
    return fields.Error(*fields.table().get("base_url"), fields.Field("base_url"),
                        "must be an absolute http:// or https:// URL");
  }
  if (status = fields.ReadBool("allow_private_networks", out.allow_private_networks);
      !status.ok()) {
    return status;
  }
  // The files are checked by --check-config and at start (adapters::CheckTrustFiles), not here.
  if (status = fields.ReadString("ca_file", out.ca_file); !status.ok()) {
    return status;
  }
  if (status = fields.ReadString("ca_path", out.ca_path); !status.ok()) {
    return status;
  }
  if (status = fields.ReadDuration("connect_timeout", false, out.connect_timeout); !status.ok()) {
    return status;
  }
  if (status = fields.ReadDuration("timeout", false, out.timeout); !status.ok()) {
    return status;
  }
  int64_t per_destination = out.max_in_flight_per_destination;
  int64_t per_platform = out.max_in_flight_per_platform;
  if (status = fields.ReadInt("max_in_flight_per_destination", 1, 10'000, per_destination);
      !status.ok()) {
    return status;
  }
  if (status = fields.ReadInt("max_in_flight_per_platform", 1, 100'000, per_platform);
      !status.ok()) {
    return status;
  }
  out.max_in_flight_per_destination = static_cast<int>(per_destination);
  out.max_in_flight_per_platform = static_cast<int>(per_platform);
  Result<std::optional<TomlFields>> retry = fields.Table("retry");
  if (!retry) {
    return retry.error();
  }
  if (retry->has_value()) {
    if (status = ReadRetry(**retry, out.retry); !status.ok()) {
      return status;
    }
  }
  return profile ? ReadProfileDefinition(fields, platform, out) : Status::Ok();
}

std::string KnownPlatforms(const Config& config) {
  std::string names;
  for (const Platform p : config.Platforms()) {
    names += names.empty() ? "" : ", ";
    names += PlatformString(p);
  }
  return names;
}

}  // namespace

Status ReadPlatformsSection(const TomlFields& platforms, std::optional<Platform> only,
                            Config& out) {
  return platforms.ForEachTable([&](std::string_view name, const TomlFields& fields) -> Status {
    std::optional<Platform> platform = ParsePlatform(name);
    // A profile platform exists once its own profile file defines it.
    if (!platform.has_value() || (!out.Defines(*platform) && only != platform)) {
      return platforms.Error(fields.table(), fields.prefix(),
                             fmt::format("unknown platform (known: {}; a new one needs a profile "
                                         "file of its own)",
                                         KnownPlatforms(out)));
    }
    if (only.has_value() && *platform != *only) {
      return platforms.Error(
          fields.table(), fields.prefix(),
          fmt::format("the {0} profile may set only platforms.{0}", PlatformString(*only)));
    }
    PlatformConfig& config = out.platform(*platform);
    if (Status status = ReadPlatform(fields, *platform, config); !status.ok()) {
      return status;
    }
    if (only == platform && static_cast<int>(*platform) >= kBuiltinPlatformCount) {
      return CheckProfileComplete(fields, config);
    }
    return Status::Ok();
  });
}

}  // namespace egress::config
