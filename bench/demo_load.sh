#!/usr/bin/env bash
# A small mixed load for the demo (config/demo.toml): a few hundred deliveries across Slack,
# Discord, LINE and webhooks, some to a receiver that answers 429 early and often, then a look
# at /v1/stats and /v1/destinations so pacing and deferral are visible. Bounded: N deliveries,
# WATCH_S seconds of watching.
#
#   mkdir -p var && build/relay-egress-sim --port 8687 --tls --tls-ca-out var/demo-sim-ca.pem &
#   build/relay-egress serve --config config/demo.toml --profiles-dir config/profiles &
#   bench/demo_load.sh [SERVICE_URL]   # N=300 WATCH_S=10 by default; ./dev demo runs all three
#
# The simulator speaks HTTPS (HTTP/2 by ALPN) with a CA made for its run; SIM_CA is that CA's
# certificate (default var/demo-sim-ca.pem). For a plain-HTTP simulator set SIM=http://127.0.0.1:8687.
# Needs curl and python3 (pretty printing). Talks only to 127.0.0.1.
set -euo pipefail

SERVICE="${1:-${SERVICE:-http://127.0.0.1:8686}}"   # ./dev demo passes it as $1
SIM="${SIM:-https://127.0.0.1:8687}"
SIM_CA="${SIM_CA:-var/demo-sim-ca.pem}"
# The demo tenant's API key (config/demo.toml), sent as Authorization: Bearer.
TOKEN="${TOKEN:-demo-api-key-0123456789}"
AUTH="Authorization: Bearer $TOKEN"
N="${N:-300}"
WATCH_S="${WATCH_S:-10}"
[[ "$N" -le 1000 ]] || { echo "N is capped at 1000 (one batch) (a demo, not a benchmark)" >&2; exit 2; }
case "$SERVICE$SIM" in
  http://127.0.0.1:*http://127.0.0.1:* | http://127.0.0.1:*https://127.0.0.1:*) ;;
  *) echo "SERVICE must be http://127.0.0.1:PORT, SIM http(s)://127.0.0.1:PORT" >&2; exit 2 ;;
esac
# curl for the simulator: trusts its per-run CA when it speaks HTTPS.
sim_curl() {
  if [[ "$SIM" == https://* ]]; then curl --cacert "$SIM_CA" "$@"; else curl "$@"; fi
}

curl -sf -H "$AUTH" "$SERVICE/v1/stats" >/dev/null || { echo "no relay-egress at $SERVICE (see the header)" >&2; exit 1; }
sim_curl -sf "$SIM/_sim/stats" >/dev/null || { echo "no simulator at $SIM (see the header)" >&2; exit 1; }
SIM_PORT="${SIM##*:}"

# The simulator plays by each platform's documented limits; one webhook receiver ("busy") is
# stricter than our default pacing (50/s) allows for, so it answers 429 with Retry-After and
# relay-egress defers what is queued for it.
sim_curl -sf -X POST "$SIM/_sim/config" -H 'Content-Type: application/json' -d '{
  "hooks": {"busy": {"rate_per_s": 2, "burst": 2, "retry_after_format": "seconds"}}
}' >/dev/null

pretty() { python3 -m json.tool 2>/dev/null || cat; }

# One batch per platform mix: deliveries are spread round robin over 8 destinations.
python3 - "$N" "$SIM_PORT" "${SIM%%://*}" >/tmp/egress-demo-batch.$$ <<'PY'
import json, sys
n, sim_port, scheme = int(sys.argv[1]), sys.argv[2], sys.argv[3]
hook = f"{scheme}://127.0.0.1:{sim_port}/hooks/"
kinds = [
    ("slack", "demo-slack", "C0DEMO1", {"text": "deploy finished"}),
    ("slack", "demo-slack", "C0DEMO2", {"text": "build green"}),
    ("discord", "demo-discord", "channels/100200300", {"content": "new signup"}),
    ("line", "demo-line", "U0123456789abcdef0123456789abcdef", {"messages": [{"type": "text", "text": "hi"}]}),
    ("webhook", "demo-hooks", hook + "orders", {"type": "order.created"}),
    ("webhook", "demo-hooks", hook + "billing", {"type": "invoice.paid"}),
    ("webhook", "demo-hooks", hook + "busy", {"type": "ping"}),
    ("webhook", "demo-hooks", hook + "busy", {"type": "ping"}),
]
items = []
for i in range(n):
    platform, cred, dest, payload = kinds[i % len(kinds)]
    p = dict(payload); p["seq"] = i
    items.append({"tenant": "demo", "platform": platform, "credential": cred,
                  "destination": dest, "payload": p})
json.dump({"deliveries": items}, sys.stdout)
PY
trap 'rm -f /tmp/egress-demo-batch.$$' EXIT

echo "== POST /v1/deliveries/batch ($N deliveries: Slack x2 channels, Discord, LINE, 3 webhooks, one of them 429-happy)"
code="$(curl -s -o /tmp/egress-demo-batch.$$.out -w '%{http_code}' -X POST -H "$AUTH" "$SERVICE/v1/deliveries/batch" \
  -H 'Content-Type: application/json' --data-binary @/tmp/egress-demo-batch.$$)"
python3 -c 'import json,sys,collections; r=json.load(open(sys.argv[1]))["results"]; print(sys.argv[2], dict(collections.Counter(x.get("state", x.get("error")) for x in r)))' \
  /tmp/egress-demo-batch.$$.out "$code" 2>/dev/null || cat /tmp/egress-demo-batch.$$.out
rm -f /tmp/egress-demo-batch.$$.out

for ((s = 1; s <= WATCH_S; s++)); do
  sleep 1
  printf '[%2ds] ' "$s"
  curl -s -H "$AUTH" "$SERVICE/v1/stats" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(" ".join(f"{k}={d[k]}" for k in ("queued","in_flight","deferred","delivered","dead","throttles","platform_429s","deferrals") if k in d))'
done

echo "== GET /v1/stats"
curl -s -H "$AUTH" "$SERVICE/v1/stats" | pretty
echo "== GET /v1/destinations (deferral = why a destination waits, next_eligible_ms = until when)"
curl -s -H "$AUTH" "$SERVICE/v1/destinations" | python3 -c '
import json, sys
for d in json.load(sys.stdin)["destinations"]:
    platform, dest, inflight = d["platform"], d["destination"][:60], d["in_flight"]
    deferral, until = d.get("deferral", "-"), d.get("next_eligible_ms", "-")
    print(f"{platform:8} {dest:60} in_flight={inflight} deferral={deferral} next_eligible_ms={until}")
' 2>/dev/null || curl -s -H "$AUTH" "$SERVICE/v1/destinations" | pretty
echo "== simulator: what the platforms saw (early = sent before a Retry-After ran out; should be 0)"
sim_curl -s "$SIM/_sim/stats" | python3 -c '
import json, sys
stats = json.load(sys.stdin)
for k, v in sorted(stats["destinations"].items()):
    req, acc, rl, early = v["requests"], v["accepted"], v["rate_limited"], v["early"]
    print(f"{k[:60]:60} requests={req} accepted={acc} rate_limited={rl} early={early}")
print("requests by protocol:", " ".join(f"{k}={v}" for k, v in stats.get("protocols", {}).items()))
' 2>/dev/null || true
