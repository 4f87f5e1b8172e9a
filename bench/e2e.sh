#!/usr/bin/env bash
# End-to-end throughput: accepted/s through POST /v1/deliveries/batch and delivered/s to the
# simulator on loopback, with every budget raised out of the way. Builds nothing: run
# `./dev build` first (or point BUILD at another build dir with the same targets plus e2e_load).
#
#   bench/e2e.sh                      # defaults below
#   TOTAL=100000 CLIENTS=2 BATCH=1000 DESTINATIONS=128 INTAKE_ONLY=1 bench/e2e.sh
#   INTAKE_ONLY=1 bench/e2e.sh        # accepted/s alone (nothing delivered)
#   DRAIN=1 bench/e2e.sh              # intake with delivery held back, then the drain alone
#                                     # (drained_per_s: delivered/s with nothing else running)
#   STORE_ON=/dev/shm bench/e2e.sh    # store on tmpfs: what is left without fsync cost
#   PER_DEST=8 HOST_CONNS=128 bench/e2e.sh   # more in flight: per destination, and connections
#                                     # to the simulator (defaults 4 and 64)
#   PERF=1 bench/e2e.sh               # also `perf record -e cpu-clock` the service (needs perf;
#                                     # PERF_CALLGRAPH= records without call graphs)
#   TARGET=nginx bench/e2e.sh         # the sink is Debian's nginx (bench/nginx_sink.sh), not the
#                                     # simulator: plain HTTP/1.1 unless TLS is set
#   TARGET=nginx TLS=h1 bench/e2e.sh  # HTTPS, [transport] http_version = "1.1"
#   TARGET=nginx TLS=h2 bench/e2e.sh  # HTTPS, http_version = "2" (ALPN h2); a throwaway CA per
#                                     # run is the transport's ca_file
#   HTTP_VERSION=auto STREAMS=100 TARGET=nginx TLS=h2 bench/e2e.sh   # other transport settings
#   SERVICE_BIN=old/relay-egress NEW_TRANSPORT_KEYS=0 TARGET=nginx TLS=h2 bench/e2e.sh
#                                     # A/B against a build without http_version (HTTP/2 by ALPN)
#   REDIS=1 bench/e2e.sh              # budgets shared through a local redis-server ([cluster],
#                                     # one node): the cost of the shared budget store
#   DYNAMODB=1 bench/e2e.sh           # the same through dynalite (.cache/dynalite, installed by
#                                     # ./dev test): budget_store = "dynamodb"
#   STORE_CPUS=1 DYNAMODB=1 taskset -c 0 bench/e2e.sh
#                                     # the store on CPU 1, everything else on CPU 0: the store's
#                                     # CPU kept apart, as a store on another machine would be
#   KEEP_TMP=1 bench/e2e.sh           # keep the temp dir (config, service and sink logs)
#   SIM_WRAPPER="valgrind --tool=callgrind --callgrind-out-file=/tmp/cg-sim.out" TOTAL=5000 \
#     TIMEOUT_S=600 bench/e2e.sh      # the simulator's instructions per request
#
# Starts the sink (build/relay-egress-sim, or nginx) and build/relay-egress serve on 127.0.0.1 (free ports), with a
# temp config and store under a temp dir, and stops both at exit. Bounded by TOTAL and
# TIMEOUT_S.
set -euo pipefail

SRC="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BUILD:-$SRC/build}"
TOTAL="${TOTAL:-20000}"
CLIENTS="${CLIENTS:-4}"
BATCH="${BATCH:-500}"
DESTINATIONS="${DESTINATIONS:-64}"
TENANTS="${TENANTS:-4}"
TIMEOUT_S="${TIMEOUT_S:-120}"
SIM_THREADS="${SIM_THREADS:-1}"
PERF="${PERF:-0}"
PER_DEST="${PER_DEST:-4}"
HOST_CONNS="${HOST_CONNS:-64}"
# INTAKE_ONLY=1: tenant_egress is 1 per hour, so nothing is delivered and intake runs alone.
INTAKE_ONLY="${INTAKE_ONLY:-0}"
# DRAIN=1: the same during intake; then e2e_load raises tenant_egress through the admin API
# (PUT /api/admin/tenants/{t}/rate_limits) and times the drain on its own.
DRAIN="${DRAIN:-0}"
# TARGET=sim (default) or nginx; TLS= (plain HTTP), h1 or h2 (HTTPS with that HTTP version).
TARGET="${TARGET:-sim}"
TLS="${TLS:-}"
case "$TLS" in
  "") HTTP_VERSION="${HTTP_VERSION:-auto}" ;;
  h1) HTTP_VERSION="${HTTP_VERSION:-1.1}" ;;
  h2) HTTP_VERSION="${HTTP_VERSION:-2}" ;;
  *) echo "TLS must be empty, h1 or h2" >&2; exit 2 ;;
esac
if [[ -n "$TLS" && "$TARGET" != nginx ]]; then
  echo "TLS=$TLS needs TARGET=nginx" >&2
  exit 2
fi
STREAMS="${STREAMS:-100}"
ADMIN_TOKEN="bench-admin-token-0123456789abcdef"

for bin in relay-egress relay-egress-sim bench/e2e_load; do
  if [[ ! -x "$BUILD/$bin" ]]; then
    echo "missing $BUILD/$bin: run ./dev build (or BUILD=<dir> with e2e_load built)" >&2
    exit 2
  fi
done

TMP="$(mktemp -d /tmp/egress-e2e-XXXXXX)"
# STORE_ON=/dev/shm puts the store on tmpfs (fsync free): separates disk sync cost from the rest.
STORE_PARENT="$(mktemp -d "${STORE_ON:-$TMP}/egress-e2e-store-XXXXXX")"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [[ "${KEEP_TMP:-0}" == 1 ]]; then
    echo "kept $TMP (logs: service.err, sim.err; nginx/)" >&2
  else
    rm -rf "$STORE_PARENT" "$TMP"
  fi
}
trap cleanup EXIT

# Starts "$@" in the background with stdout to $TMP/$name.out (in this shell, so cleanup sees
# the pid); wait_port then waits for "listening 127.0.0.1:PORT" and echoes PORT.
start() {
  local name="$1"; shift
  "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" &
  PIDS+=($!)
  echo $! >"$TMP/$name.pid"
}
wait_port() {
  local name="$1"
  for _ in $(seq 1 600); do
    if grep -q '^listening ' "$TMP/$name.out" 2>/dev/null; then
      head -1 "$TMP/$name.out" | sed 's/.*://'
      return 0
    fi
    sleep 0.05
  done
  echo "$name did not start:" >&2; cat "$TMP/$name.err" >&2
  return 1
}

# SIM_WRAPPER: the same for the simulator, e.g. "valgrind --tool=callgrind
# --callgrind-out-file=/tmp/cg-sim.out" (it stops on the SIGTERM at exit and writes the file).
SCHEME=http
CA_LINE=""
if [[ "$TARGET" == nginx ]]; then
  start sim "$SRC/bench/nginx_sink.sh" "$TMP/nginx" "$([[ -n "$TLS" ]] && echo tls || echo plain)"
  SIM_PORT="$(wait_port sim)"
  if [[ -n "$TLS" ]]; then
    SCHEME=https
    CA_LINE="ca_file = \"$TMP/nginx/ca.pem\""
  fi
else
  start sim ${SIM_WRAPPER:-} "$BUILD/relay-egress-sim" --port 0 --threads "$SIM_THREADS"
  SIM_PORT="$(wait_port sim)"
fi

# REDIS=1: a redis-server of its own on a loopback port (nothing persisted), and [cluster].
CLUSTER_LINES=""
if [[ "${REDIS:-0}" == 1 ]]; then
  REDIS_PORT="${REDIS_PORT:-$((20000 + RANDOM % 30000))}"
  start redis ${STORE_CPUS:+taskset -c "$STORE_CPUS"} \
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$TMP"
  for _ in $(seq 1 100); do
    redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break
    sleep 0.05
  done
  CLUSTER_LINES="$(printf '[cluster]\nredis_url = "redis://127.0.0.1:%s"\n' "$REDIS_PORT")"
fi

# DYNAMODB=1: dynalite of its own on a loopback port (tables in memory), and [cluster] with
# budget_store = "dynamodb".
if [[ "${DYNAMODB:-0}" == 1 ]]; then
  DYNAMO_PORT="${DYNAMO_PORT:-$((20000 + RANDOM % 30000))}"
  start dynalite ${STORE_CPUS:+taskset -c "$STORE_CPUS"} \
    "$SRC/.cache/dynalite/node_modules/.bin/dynalite" --host 127.0.0.1 \
    --port "$DYNAMO_PORT" --createTableMs 0
  printf '[default]\naws_access_key_id = AKIDBENCH\naws_secret_access_key = bench\n' \
    >"$TMP/aws-credentials"
  CLUSTER_LINES="$(printf '[cluster]\nbudget_store = "dynamodb"\ndynamodb_table = "bench"\ndynamodb_region = "us-east-1"\ndynamodb_endpoint = "http://127.0.0.1:%s"\ndynamodb_create_table = true\ndynamodb_credentials_file = "%s"\n' "$DYNAMO_PORT" "$TMP/aws-credentials")"
fi

if [[ "$INTAKE_ONLY" == 1 || "$DRAIN" == 1 ]]; then
  EGRESS_LIMIT=1 EGRESS_SCALE_MS=3600000 EGRESS_BURST=1
else
  EGRESS_LIMIT=1000000 EGRESS_SCALE_MS=1000 EGRESS_BURST=100000
fi
{
  cat <<EOF
[server]
listen = "127.0.0.1:0"
data_dir = "$STORE_PARENT/store"
batch_max_items = 1000
tenant_backlog_watermark = 10000000
admin_token = "$ADMIN_TOKEN"
log_level = "${LOG_LEVEL:-info}"

[transport]
max_host_connections = $HOST_CONNS
max_total_connections = 256
$([[ "${NEW_TRANSPORT_KEYS:-1}" == 1 ]] && printf 'http_version = "%s"\nmax_concurrent_streams = %s\n' "$HTTP_VERSION" "$STREAMS")
$CA_LINE

[platforms.webhook]
allow_private_networks = true
max_in_flight_per_destination = $PER_DEST
max_in_flight_per_platform = 1024

# Budgets out of the way: 1M per second per scope (the same as PUT
# /api/admin/tenants/{t}/rate_limits with these values for each bench tenant).
[budgets.webhook_destination]
limit = 1000000
scale_ms = 1000
burst = 100000
[budgets.tenant_egress]
limit = $EGRESS_LIMIT
scale_ms = $EGRESS_SCALE_MS
burst = $EGRESS_BURST
[budgets.tenant_intake]
limit = 1000000
scale_ms = 1000
burst = 100000

$CLUSTER_LINES
EOF
  for t in $(seq 0 $((TENANTS - 1))); do
    printf '\n[tenants.bench-%d.credentials.hooks]\nplatform = "webhook"\n' "$t"
    printf 'secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"\n'
  done
} >"$TMP/relay-egress.toml"

# SERVICE_WRAPPER: e.g. "valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.out" (instruction
# counts per function, repeatable under load; use a small TOTAL and a large TIMEOUT_S).
start service ${SERVICE_WRAPPER:-} "${SERVICE_BIN:-$BUILD/relay-egress}" serve --config "$TMP/relay-egress.toml" \
  --profiles-dir "$SRC/config/profiles"
PORT="$(wait_port service)"
if [[ "${REDIS:-0}" == 1 || "${DYNAMODB:-0}" == 1 ]]; then  # on the shared budgets first
  for _ in $(seq 1 100); do
    curl -sf -H "X-Admin-Token: $ADMIN_TOKEN" "127.0.0.1:$PORT/metrics" |
      grep -q '^relay_egress_budget_store_up 1' && break
    sleep 0.05
  done
fi
SERVICE_PID="$(cat "$TMP/service.pid")"
SIM_PID="$(cat "$TMP/sim.pid")"
if [[ "$TARGET" == nginx ]]; then  # nginx's one worker does the work ("sim" figures are nginx's)
  for _ in $(seq 1 100); do
    worker="$(pgrep -P "$SIM_PID" | head -1 || true)"
    [[ -n "$worker" ]] && break
    sleep 0.05
  done
  SIM_PID="${worker:-$SIM_PID}"
fi

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
svc0="$(cpu_ticks "$SERVICE_PID")"; sim0="$(cpu_ticks "$SIM_PID")"
# The shared budget store's own process (redis-server or dynalite), when there is one: on this
# machine it takes CPU from the service and the sink.
STORE_PID=""
for name in redis dynalite; do
  [[ -f "$TMP/$name.pid" ]] && STORE_PID="$(cat "$TMP/$name.pid")"
done
store0="$([[ -n "$STORE_PID" ]] && cpu_ticks "$STORE_PID" || echo 0)"

if [[ "$PERF" == 1 ]] && ! command -v perf >/dev/null; then
  echo "PERF=1 needs perf (apt-get install -y linux-perf); running without it" >&2
  PERF=0
fi
if [[ "$PERF" == 1 ]]; then
  perf record -e cpu-clock ${PERF_CALLGRAPH--g} -p "$SERVICE_PID" -o "${PERF_DATA:-/tmp/egress-e2e-perf.data}" 2>/dev/null &
  PERF_PID=$!
fi

set +e
"$BUILD/bench/e2e_load" --port "$PORT" --hook_base "$SCHEME://127.0.0.1:$SIM_PORT/hooks/" \
  --clients "$CLIENTS" --batch "$BATCH" --total "$TOTAL" --destinations "$DESTINATIONS" \
  --tenants "$TENANTS" --timeout_s "$TIMEOUT_S" --wait "$((1 - INTAKE_ONLY))" --token "$ADMIN_TOKEN" \
  $([[ "$DRAIN" == 1 ]] && echo --drain_token "$ADMIN_TOKEN" --service_pid "$SERVICE_PID") |
  tee "$TMP/load.out"
rc=${PIPESTATUS[0]}
set -e

if [[ "$PERF" == 1 ]]; then
  kill -INT "$PERF_PID" 2>/dev/null || true
  wait "$PERF_PID" || true
  perf report -i "${PERF_DATA:-/tmp/egress-e2e-perf.data}" --children --sort symbol --stdio -g none 2>/dev/null |
    grep -v '^#' | grep '%' | head -40 >"${PERF_OUT:-/tmp/egress-e2e-perf.txt}"
  echo "perf_data ${PERF_DATA:-/tmp/egress-e2e-perf.data} perf_top ${PERF_OUT:-/tmp/egress-e2e-perf.txt}"
fi

tck="$(getconf CLK_TCK)"
delivered="$(awk '$1 == "delivered" {print $2}' "$TMP/load.out")"
svc1="$(cpu_ticks "$SERVICE_PID")"; sim1="$(cpu_ticks "$SIM_PID")"
if [[ -n "$STORE_PID" ]]; then
  awk -v a="$store0" -v b="$(cpu_ticks "$STORE_PID")" -v t="$(getconf CLK_TCK)" \
    'BEGIN { printf "budget_store_cpu_seconds %.2f\n", (b - a) / t }'
fi
awk -v a="$svc0" -v b="$svc1" -v c="$sim0" -v d="$sim1" -v t="$tck" -v n="$delivered" 'BEGIN {
  if (n > 0) {
    printf "service_cpu_seconds %.2f\nservice_cpu_us_per_delivery %.1f\n", (b - a) / t, (b - a) / t * 1e6 / n
    printf "sim_cpu_seconds %.2f\nsim_cpu_us_per_delivery %.1f\n", (d - c) / t, (d - c) / t * 1e6 / n
  }
}'
[[ "$TARGET" == nginx ]] || echo "sim_totals $(curl -s "http://127.0.0.1:$SIM_PORT/_sim/stats" | python3 -c \
  'import json,sys; t=json.load(sys.stdin)["totals"]; print("requests=%d accepted=%d duplicates=%d errors=%d" % (t["requests"], t["accepted"], t["duplicates"], t["errors"]))' 2>/dev/null || echo '?')"
echo "service_stats $(curl -s -H "Authorization: Bearer $ADMIN_TOKEN" "http://127.0.0.1:$PORT/v1/stats")"
if [[ "$rc" != 0 ]]; then  # not all delivered: which destinations still hold work, and why
  curl -s -H "Authorization: Bearer $ADMIN_TOKEN" "http://127.0.0.1:$PORT/v1/destinations" | python3 -c '
import json, sys
for d in json.load(sys.stdin)["destinations"]:
    if d.get("queued") or d.get("deferred") or d.get("in_flight"):
        print("stuck", d["destination"], {k: d.get(k) for k in
              ("queued", "deferred", "in_flight", "has_head", "deferral", "disabled")})' || true
fi
exit "$rc"
