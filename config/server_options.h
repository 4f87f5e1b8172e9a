#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "dispatcher/base/clock.h"
#include "dispatcher/base/host_port.h"
#include "dispatcher/base/log_options.h"
#include "dispatcher/base/status.h"

namespace egress::config {

// [server.retention]: how long finished work is kept, and how often it is purged. Each age is a
// duration counted from the delivery's finish, or "off" (or any zero duration) to keep that
// class forever. See docs/configuration.md and docs/storage.md, "Retention".
struct RetentionConfig {
  // Delivered records. Default: 7d.
  Millis delivered{7LL * 24 * 3'600'000};
  // Cancelled records. Default: 7d.
  Millis cancelled{7LL * 24 * 3'600'000};
  // Dead records (replay them before this). Default: 30d.
  Millis dead{30LL * 24 * 3'600'000};
  // How long a finished delivery's idempotency key keeps answering with its id; a repeated key
  // after that is a new delivery. A live delivery's key never expires. Default: 24h.
  Millis idempotency{24LL * 3'600'000};
  // From the end of one purge pass to the start of the next; at least 1s. Default: 1m.
  Millis interval{60'000};
};
// What the body of one delivery request may hold besides its payload (its other fields): the
// body limit of every request but a batch is max_payload_bytes plus this.
inline constexpr size_t kDeliveryBodyAllowance = 64 << 10;

// The largest bound of a tenant's stored bytes (server.tenant_max_stored_bytes, [tenants.<t>]
// max_stored_bytes): 1 PiB, past any disk one node has; a larger value is a mistake.
inline constexpr int64_t kMaxStoredBytesBound = int64_t{1} << 50;

// Whether the API asks who is calling (server.auth).
enum class AuthMode {
  kRequired,  // every route but /healthz and /readyz needs a tenant API key or the admin token
  kOff,       // the open API of old: only /api/admin needs the admin token; loopback only
};

// The service's own settings ([server] in config). Plain data; see docs/configuration.md.
struct ServerOptions {
  // Where the HTTP API listens, parsed from "host:port" (ParseHostPort: a name such as
  // "localhost", an IPv4 literal, or IPv6 in brackets). Default: 127.0.0.1:8686.
  HostPort listen{.host = "127.0.0.1", .port = 8686};
  // The store directory, created when missing. Default: "./var/data".
  std::string data_dir = "./var/data";
  // The X-Admin-Token of the admin API; RELAY_EGRESS_ADMIN_TOKEN overrides the file. A secret:
  // never log it. Default: empty, which turns the admin API off (every call gets 401).
  std::string admin_token;
  // "required" or "off" (AuthMode). "off" is refused unless `listen` is a loopback address
  // (CheckAuthListen). Default: "required".
  AuthMode auth = AuthMode::kRequired;
  // Whether /metrics needs the admin token (when auth is required). Default: true.
  bool metrics_auth = true;
  // Failed authentications (a wrong key or token) one source address may make per minute; past
  // it the address is answered 429 with Retry-After. 1 to 1,000,000. Default: 20.
  int64_t auth_failure_budget = 20;
  // The file holding the key that seals secret settings at rest (storage/secrets_key.h).
  // Default: empty (RELAY_EGRESS_SECRETS_KEY, else data_dir/secrets.key, generated when missing).
  std::string secrets_key_file;
  // The key's text from RELAY_EGRESS_SECRETS_KEY. A secret. Default: empty.
  std::string secrets_key_env;
  // Largest delivery payload accepted by intake (413 beyond). Default: 1 MiB.
  size_t max_payload_bytes = 1 << 20;
  // Most deliveries in one POST /v1/deliveries/batch. Default: 1000.
  size_t batch_max_items = 1000;
  // Deepest nesting of objects and arrays in a payload accepted by intake (400 naming payload
  // beyond); a payload object holding only scalars is 1 deep. Bounds every later walk of a
  // stored payload (adapters, views). 1 to 512. Default: 64.
  size_t max_json_depth = 64;
  // Largest body of a POST /v1/deliveries/batch (413 beyond); every other request's body may be
  // max_payload_bytes + kDeliveryBodyAllowance. At least that; at most 1 GiB. Default: 16 MiB.
  size_t max_batch_bytes = 16 << 20;
  // HTTP connections open at once; more are closed as they arrive (a few health slots beyond it
  // answer GET /healthz and /readyz only). 1 to 1,000,000. Default: 4096.
  size_t max_connections = 4096;
  // HTTP connections one client address (an IPv6 one by its /64) may hold open at once; more
  // are closed as they arrive. Peers in trusted_proxies are not counted. 0 (no cap) to
  // 1,000,000. Default: 64.
  size_t max_connections_per_address = 64;
  // A connection must send a request's whole header within header_timeout (from its accept, or
  // from the first byte of a later request), may stay idle between requests for idle_timeout,
  // must send a body within read_timeout from the end of its header, and take at most
  // write_timeout to read each answer; else it is closed. Default: 10 s, 60 s, 60 s, 30 s.
  Millis header_timeout{10'000};
  Millis idle_timeout{60'000};
  Millis read_timeout{60'000};
  Millis write_timeout{30'000};
  // Bytes of request bodies the API holds at once, read or being read and not yet answered;
  // one tenant (or one unauthenticated address) may hold half. Over it a request is answered
  // 503 server_busy with Retry-After. At least 2 x max_batch_bytes; at most 64 GiB.
  // Default: 256 MiB (or 2 x max_batch_bytes when that is more).
  size_t max_body_bytes_in_flight = 256 << 20;
  // The proxies (CIDRs) whose Forwarded / X-Forwarded-For name a request's client: per-address
  // limits and the failed-authentication budget then count the client, not the proxy.
  // Default: none (every peer is the client).
  std::vector<std::string> trusted_proxies;
  // Connections from trusted_proxies start with a PROXY protocol header (v1 or v2), which names
  // the client: read before HTTP, required from them (a connection without one is closed), never
  // read from another peer. Needs trusted_proxies. Default: false.
  bool proxy_protocol = false;
  // Intake requests of one tenant waiting for their write at once; more get 429. 1 to 100,000.
  // Default: 256.
  size_t tenant_max_requests_in_flight = 256;
  // A destination with nothing queued, in flight or disabled for this long is forgotten by the
  // delivery loop and the scheduler (its learned limits with it); its next delivery starts it
  // afresh. Default: 10 min.
  Millis destination_idle{600'000};
  // Discord bans a bot token for a while after 10,000 invalid requests (401, 403, 429) in 10
  // minutes; the token is stopped at this many, counted over every node of a [cluster]. 1 to
  // 9,999. Default: 5,000.
  int64_t discord_invalid_request_stop = 5000;
  // Undelivered deliveries a tenant may hold before intake answers 429. Default: 100000.
  uint64_t tenant_backlog_watermark = 100'000;
  // Bytes a tenant's delivery records may take in the store (storage::QueueStore::
  // TenantStoredBytes: finished ones too, until retention removes them) before intake answers
  // 429 storage_quota_exceeded; each tenant's [tenants.<t>] max_stored_bytes overrides it.
  // 0 (no bound) to kMaxStoredBytesBound. Default: 0.
  uint64_t tenant_max_stored_bytes = 0;
  // Every budget is paced this many percent under its limit, so network jitter cannot land a
  // send on the wrong side of a platform's own meter. 0 to 50. Default: 5.
  int64_t pacing_margin_percent = 5;
  // The most of each shared scope (a tenant's egress budget, a Slack workspace, a Discord
  // token's global limit) that `bulk` deliveries may take, so normal and high ones always find
  // the rest (pacing::SchedulerOptions::bulk_share). 1 to 100; 100: no cap. Default: 80.
  int64_t bulk_share_percent = 80;
  // The event log on stderr: "text" or "json" (one object per line). Default: "text".
  LogFormat log_format = LogFormat::kText;
  // "debug", "info", "warn" or "error". Default: "info".
  LogLevel log_level = LogLevel::kInfo;
  // Whether `serve` may write a core dump. Off, it sets RLIMIT_CORE to 0 and PR_SET_DUMPABLE to
  // 0 at start (DisableCoreDumps): a dump holds the admin token, API keys and credentials in
  // plain text. Turn on only to debug a crash, on a host whose dumps only you can read.
  // Default: false.
  bool core_dumps = false;
  RetentionConfig retention;
};

// InvalidArgument when `server` turns auth off on a listen address that is not loopback (an
// IPv4 127.x.x.x or ::1 literal, or "localhost"): an open API reachable from other hosts.
Status CheckAuthListen(const ServerOptions& server);

}  // namespace egress::config
