#include <algorithm>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "adapters/ip_network.h"
#include "config/toml_sections.h"
#include "dispatcher/base/host_port.h"

namespace egress::config {
namespace {

constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();

// A retention age: a duration (zero allowed) or "off", which also reads as 0 (keep forever).
Status ReadRetentionAge(const TomlFields& fields, std::string_view key, Millis& out) {
  const toml::node* node = fields.table().get(key);
  if (node != nullptr && node->as_string() != nullptr && node->as_string()->get() == "off") {
    out = Millis(0);
    return Status::Ok();
  }
  return fields.ReadDuration(key, true, out);
}

// [server.retention]
Status ReadRetentionSection(const TomlFields& retention, RetentionConfig& out) {
  Status status =
      retention.CheckKeys({"delivered", "cancelled", "dead", "idempotency", "interval"});
  if (!status.ok()) {
    return status;
  }
  for (auto [key, age] : {std::pair<std::string_view, Millis*>{"delivered", &out.delivered},
                          {"cancelled", &out.cancelled},
                          {"dead", &out.dead},
                          {"idempotency", &out.idempotency}}) {
    if (status = ReadRetentionAge(retention, key, *age); !status.ok()) {
      return status;
    }
  }
  if (status = retention.ReadDuration("interval", false, out.interval); !status.ok()) {
    return status;
  }
  if (out.interval < Millis(1000)) {
    return retention.Error(*retention.table().get("interval"), retention.Field("interval"),
                           "must be at least 1s");
  }
  return Status::Ok();
}

// trusted_proxies: a list of CIDRs, each checked as IpNetwork reads it.
Status ReadTrustedProxies(const TomlFields& server, std::vector<std::string>& out) {
  if (!server.Has("trusted_proxies")) {
    return Status::Ok();
  }
  const toml::node& node = *server.table().get("trusted_proxies");
  const toml::array* list = node.as_array();
  if (list == nullptr) {
    return server.Error(node, server.Field("trusted_proxies"),
                        "must be a list of CIDR strings, e.g. [\"10.0.0.0/8\"]");
  }
  out.clear();
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string field = fmt::format("{}[{}]", server.Field("trusted_proxies"), i);
    const toml::node& item = *list->get(i);
    const auto* text = item.as_string();
    if (text == nullptr) {
      return server.Error(item, field, "must be a string such as \"10.0.0.0/8\"");
    }
    if (Result<adapters::IpNetwork> network = adapters::IpNetwork::Parse(text->get()); !network) {
      return server.Error(item, field, network.error().message());
    }
    out.push_back(text->get());
  }
  return Status::Ok();
}

}  // namespace

Status ReadServerSection(const TomlFields& server, ServerOptions& out) {
  Status status = server.CheckKeys({"listen",
                                    "data_dir",
                                    "admin_token",
                                    "secrets_key_file",
                                    "max_payload_bytes",
                                    "batch_max_items",
                                    "max_json_depth",
                                    "tenant_backlog_watermark",
                                    "tenant_max_stored_bytes",
                                    "log_format",
                                    "log_level",
                                    "pacing_margin_percent",
                                    "bulk_share_percent",
                                    "max_batch_bytes",
                                    "max_connections",
                                    "max_connections_per_address",
                                    "header_timeout",
                                    "idle_timeout",
                                    "read_timeout",
                                    "max_body_bytes_in_flight",
                                    "trusted_proxies",
                                    "proxy_protocol",
                                    "core_dumps",
                                    "write_timeout",
                                    "tenant_max_requests_in_flight",
                                    "destination_idle",
                                    "retention",
                                    "auth",
                                    "metrics_auth",
                                    "auth_failure_budget",
                                    "discord_invalid_request_stop"});
  if (!status.ok()) {
    return status;
  }
  Result<std::optional<TomlFields>> retention = server.Table("retention");
  if (!retention) {
    return retention.error();
  }
  if (retention->has_value()) {
    if (status = ReadRetentionSection(**retention, out.retention); !status.ok()) {
      return status;
    }
  }
  std::string listen = out.listen.ToString();
  if (status = server.ReadString("listen", listen); !status.ok()) {
    return status;
  }
  Result<HostPort> parsed = ParseHostPort(listen);
  if (!parsed) {
    return server.Error(*server.table().get("listen"), server.Field("listen"),
                        parsed.error().message());
  }
  out.listen = std::move(*parsed);
  if (status = server.ReadString("data_dir", out.data_dir); !status.ok()) {
    return status;
  }
  if (out.data_dir.empty()) {
    return server.Error(*server.table().get("data_dir"), server.Field("data_dir"),
                        "must not be empty");
  }
  if (status = server.ReadString("secrets_key_file", out.secrets_key_file); !status.ok()) {
    return status;
  }
  if (status = server.ReadSecret("admin_token", out.admin_token); !status.ok()) {
    return status;
  }
  std::string auth;
  if (status = server.ReadString("auth", auth); !status.ok()) {
    return status;
  }
  if (server.Has("auth")) {
    if (auth == "required") {
      out.auth = AuthMode::kRequired;
    } else if (auth == "off") {
      out.auth = AuthMode::kOff;
    } else {
      return server.Error(*server.table().get("auth"), server.Field("auth"),
                          "must be \"required\" or \"off\"");
    }
  }
  if (status = server.ReadBool("metrics_auth", out.metrics_auth); !status.ok()) {
    return status;
  }
  if (status = server.ReadBool("core_dumps", out.core_dumps); !status.ok()) {
    return status;
  }
  if (status = server.ReadInt("auth_failure_budget", 1, 1'000'000, out.auth_failure_budget);
      !status.ok()) {
    return status;
  }
  // Under Discord's ban line of 10,000 invalid requests in 10 minutes, never at it.
  if (status = server.ReadInt("discord_invalid_request_stop", 1, 9'999,
                              out.discord_invalid_request_stop);
      !status.ok()) {
    return status;
  }
  int64_t payload = static_cast<int64_t>(out.max_payload_bytes);
  int64_t batch = static_cast<int64_t>(out.batch_max_items);
  int64_t watermark = static_cast<int64_t>(out.tenant_backlog_watermark);
  // The store keeps a payload in one record; 64 MiB is far past any platform's own cap.
  if (status = server.ReadInt("max_payload_bytes", 1, 64 << 20, payload); !status.ok()) {
    return status;
  }
  if (status = server.ReadInt("batch_max_items", 1, 100'000, batch); !status.ok()) {
    return status;
  }
  int64_t depth = static_cast<int64_t>(out.max_json_depth);
  // 512: past any platform's payload, and well inside what nlohmann's recursive dump survives.
  if (status = server.ReadInt("max_json_depth", 1, 512, depth); !status.ok()) {
    return status;
  }
  out.max_json_depth = static_cast<size_t>(depth);
  if (status = server.ReadInt("tenant_backlog_watermark", 1, kMaxInt, watermark); !status.ok()) {
    return status;
  }
  out.max_payload_bytes = static_cast<size_t>(payload);
  out.batch_max_items = static_cast<size_t>(batch);
  int64_t batch_bytes = static_cast<int64_t>(out.max_batch_bytes);
  if (status = server.ReadInt("max_batch_bytes", 1, int64_t{1} << 30, batch_bytes); !status.ok()) {
    return status;
  }
  // A batch of one must fit: a payload and its other fields (the same 64 KiB allowance as a
  // single delivery's body). Unset, the default grows to that.
  const int64_t one_item = payload + static_cast<int64_t>(kDeliveryBodyAllowance);
  if (!server.Has("max_batch_bytes")) {
    batch_bytes = std::max(batch_bytes, one_item);
  } else if (batch_bytes < one_item) {
    return server.Error(*server.table().get("max_batch_bytes"), server.Field("max_batch_bytes"),
                        fmt::format("must be at least max_payload_bytes + 65536 ({})", one_item));
  }
  out.max_batch_bytes = static_cast<size_t>(batch_bytes);
  int64_t connections = static_cast<int64_t>(out.max_connections);
  if (status = server.ReadInt("max_connections", 1, 1'000'000, connections); !status.ok()) {
    return status;
  }
  out.max_connections = static_cast<size_t>(connections);
  int64_t per_address = static_cast<int64_t>(out.max_connections_per_address);
  if (status = server.ReadInt("max_connections_per_address", 0, 1'000'000, per_address);
      !status.ok()) {
    return status;
  }
  out.max_connections_per_address = static_cast<size_t>(per_address);
  if (status = server.ReadDuration("header_timeout", false, out.header_timeout); !status.ok()) {
    return status;
  }
  if (status = server.ReadDuration("idle_timeout", false, out.idle_timeout); !status.ok()) {
    return status;
  }
  if (status = server.ReadDuration("read_timeout", false, out.read_timeout); !status.ok()) {
    return status;
  }
  // One tenant may hold half of it, and must be able to send its largest batch.
  int64_t in_flight_bytes = static_cast<int64_t>(out.max_body_bytes_in_flight);
  if (status = server.ReadInt("max_body_bytes_in_flight", 1, int64_t{64} << 30, in_flight_bytes);
      !status.ok()) {
    return status;
  }
  if (!server.Has("max_body_bytes_in_flight")) {
    in_flight_bytes = std::max(in_flight_bytes, 2 * batch_bytes);
  } else if (in_flight_bytes < 2 * batch_bytes) {
    return server.Error(*server.table().get("max_body_bytes_in_flight"),
                        server.Field("max_body_bytes_in_flight"),
                        fmt::format("must be at least 2 x max_batch_bytes ({})", 2 * batch_bytes));
  }
  out.max_body_bytes_in_flight = static_cast<size_t>(in_flight_bytes);
  if (status = ReadTrustedProxies(server, out.trusted_proxies); !status.ok()) {
    return status;
  }
  if (status = server.ReadBool("proxy_protocol", out.proxy_protocol); !status.ok()) {
    return status;
  }
  if (out.proxy_protocol && out.trusted_proxies.empty()) {
    return server.Error(*server.table().get("proxy_protocol"), server.Field("proxy_protocol"),
                        "needs trusted_proxies: only a trusted proxy's header is read");
  }
  if (status = server.ReadDuration("write_timeout", false, out.write_timeout); !status.ok()) {
    return status;
  }
  int64_t in_flight = static_cast<int64_t>(out.tenant_max_requests_in_flight);
  if (status = server.ReadInt("tenant_max_requests_in_flight", 1, 100'000, in_flight);
      !status.ok()) {
    return status;
  }
  out.tenant_max_requests_in_flight = static_cast<size_t>(in_flight);
  if (status = server.ReadDuration("destination_idle", false, out.destination_idle); !status.ok()) {
    return status;
  }
  out.tenant_backlog_watermark = static_cast<uint64_t>(watermark);
  int64_t stored_bytes = static_cast<int64_t>(out.tenant_max_stored_bytes);
  if (status = server.ReadInt("tenant_max_stored_bytes", 0, kMaxStoredBytesBound, stored_bytes);
      !status.ok()) {
    return status;
  }
  out.tenant_max_stored_bytes = static_cast<uint64_t>(stored_bytes);
  if (status = server.ReadInt("pacing_margin_percent", 0, 50, out.pacing_margin_percent);
      !status.ok()) {
    return status;
  }
  if (status = server.ReadInt("bulk_share_percent", 1, 100, out.bulk_share_percent); !status.ok()) {
    return status;
  }
  std::string format, level;
  if (status = server.ReadString("log_format", format); !status.ok()) {
    return status;
  }
  if (server.table().get("log_format") != nullptr && !ParseLogFormat(format, out.log_format)) {
    return server.Error(*server.table().get("log_format"), server.Field("log_format"),
                        "must be \"text\" or \"json\"");
  }
  if (status = server.ReadString("log_level", level); !status.ok()) {
    return status;
  }
  if (server.table().get("log_level") != nullptr && !ParseLogLevel(level, out.log_level)) {
    return server.Error(*server.table().get("log_level"), server.Field("log_level"),
                        "must be one of \"debug\", \"info\", \"warn\", \"error\"");
  }
  return Status::Ok();
}

Status ReadTransportSection(const TomlFields& transport, adapters::TransportOptions& out) {
  Status status = transport.CheckKeys(
      {"max_host_connections", "max_total_connections", "max_response_body", "ca_file", "ca_path",
       "user_agent", "http_version", "max_concurrent_streams", "min_tls_version"});
  if (!status.ok()) {
    return status;
  }
  int64_t per_host = out.max_host_connections;
  int64_t total = out.max_total_connections;
  int64_t body = static_cast<int64_t>(out.max_response_body);
  int64_t streams = out.max_concurrent_streams;
  if (status = transport.ReadInt("max_host_connections", 1, 10'000, per_host); !status.ok()) {
    return status;
  }
  if (status = transport.ReadInt("max_total_connections", 1, 100'000, total); !status.ok()) {
    return status;
  }
  if (status = transport.ReadInt("max_response_body", 1, 64 << 20, body); !status.ok()) {
    return status;
  }
  if (status = transport.ReadString("ca_file", out.ca_file); !status.ok()) {
    return status;
  }
  if (status = transport.ReadString("ca_path", out.ca_path); !status.ok()) {
    return status;
  }
  if (status = transport.ReadString("user_agent", out.user_agent); !status.ok()) {
    return status;
  }
  if (status = transport.ReadInt("max_concurrent_streams", 1, 1'000, streams); !status.ok()) {
    return status;
  }
  if (const toml::node* node = transport.table().get("http_version"); node != nullptr) {
    std::string version;
    if (status = transport.ReadString("http_version", version); !status.ok()) {
      return status;
    }
    if (version == "auto") {
      out.http_version = adapters::HttpVersion::kAuto;
    } else if (version == "1.1") {
      out.http_version = adapters::HttpVersion::kHttp11;
    } else if (version == "2") {
      out.http_version = adapters::HttpVersion::kHttp2;
    } else {
      return transport.Error(*node, transport.Field("http_version"),
                             "must be \"auto\", \"1.1\" or \"2\"");
    }
  }
  if (const toml::node* node = transport.table().get("min_tls_version"); node != nullptr) {
    std::string version;
    if (status = transport.ReadString("min_tls_version", version); !status.ok()) {
      return status;
    }
    if (version == "1.2") {
      out.min_tls_version = adapters::TlsVersion::kTls12;
    } else if (version == "1.3") {
      out.min_tls_version = adapters::TlsVersion::kTls13;
    } else {
      return transport.Error(*node, transport.Field("min_tls_version"),
                             "must be \"1.2\" or \"1.3\"");
    }
  }
  out.max_concurrent_streams = static_cast<long>(streams);
  out.max_host_connections = static_cast<long>(per_host);
  out.max_total_connections = static_cast<long>(total);
  out.max_response_body = static_cast<size_t>(body);
  return Status::Ok();
}

}  // namespace egress::config
