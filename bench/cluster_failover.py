#!/usr/bin/python3
"""N nodes on one PostgreSQL store (issue 29): is every acknowledged delivery delivered, once, in
order, when a node dies, stalls or the database fails over, and how long do its destinations wait?

Starts on loopback: a PostgreSQL 15 (bench/pg_local.py; with --pg-standby or --mode pg-kill also
a synchronous streaming standby, the nodes' URL naming both with
target_session_attrs=read-write), a redis-server (no persistence), a receiver of this script's
own (HTTP/1.1 keep-alive, listen backlog 256) with URLS destinations /u/<i> that accept at most
--url-limit requests in any second each and answer 429 with Retry-After: 1 beyond, and N
`relay-egress serve` nodes, each with its own listen port and data_dir, the same secrets key,
`[store] backend = "postgres"` and `[cluster]` (Redis, node_id, expected_nodes = N), and
`[budgets.webhook_destination]` at the receiver's limit (paced 5 % under it), so a 429 is rare.
Each node sends `User-Agent: relay-egress-bench/node<i>` ([transport] user_agent): the receiver
knows which node sent each request. The script supervises the nodes as systemd's Restart=always
would (a node that exits, e.g. 4 after losing the store's node lock, is started again after
0.5 s) except the one it kills.

It posts DELIVERIES webhooks (tenant "bench"), the i-th to /u/<i % URLS>, at --rate per second
(open loop: one thread per URL, which posts that URL's deliveries one after another, each at its
time or at once when late), round-robin over the nodes whose /readyz answers 200 (polled every
0.2 s: a standby does not listen). Each carries a per-URL sequence number (payload
{"u","seq","t"}), idempotency_key "u<i>-<seq>" and, unless --no-ordering-key, ordering_key
"u<i>"; a post that fails (refused, timed out, 503, 429) is sent again, to the next ready node,
with the same idempotency key, until acknowledged (202, or 200 for a repeat) or --post-deadline.
The acknowledged set is what must arrive.

--mode kill: after --kill-after arrivals, SIGKILL the victim (--victim: a node number, or
  "busiest", the node that sent most so far, by default) and keep it down.
--mode stop: SIGSTOP the victim for --stop-seconds (15: three 5 s lease periods), then SIGCONT,
  and report what it sent after SIGCONT to destinations another node served while it was stopped.
--mode pg-kill: SIGKILL the PostgreSQL primary, then `pg_ctl promote` the synchronous standby.
--mode none: nothing fails (the baseline). With --no-limit: no per-URL limit at the receiver and
  every budget out of the way; first the deliveries are posted in batches of --batch as fast as
  the nodes take them (delivered/s across the cluster), then --probe-seconds of single posts at
  --rate (the intake latency at that rate).

--sink sim (the default with --no-limit, which it needs; --sink python keeps the receiver
above): the receiver is build/relay-egress-sim (--sim-threads, 1), its webhook receivers
/hooks/u<i> with no limit, instead of this script's, which takes at most ~3,300 requests/s.
Payloads also carry msg_id (the idempotency key) and ordering_key "u<i>": the simulator counts
accepted requests, duplicates (a webhook-id again, or a msg_id again) and order violations (a seq
below the last accepted one of its URL). --deliveries defaults to 30,000 then (the batches last
several seconds). A phase is complete when the simulator's accepted count reaches the
acknowledged count (GET /_sim/stats every 20 ms): delivered/s is from the first post to that
poll. The summary has the batches' CPU seconds per process (/proc/<pid>/stat: each node,
PostgreSQL's postmaster with its backends, Redis, the simulator, this script), and no per-URL
gaps or arrivals.tsv (the simulator does not time arrivals).
--bullmq (with --sink sim): before relay-egress's batches, the same deliveries (same URLs,
payloads) through BullMQ (bench/bullmq/: package.json pins it, `npm ci` installs it there the
first time) on a redis-server of its own (FLUSHALL before each run; the simulator reset too):
bench/bullmq/producer.js adds them with Queue.addBulk in batches of --batch, one call after
another; --bullmq-shapes (default 1x64: one process, concurrency 64) worker processes of
bench/bullmq/worker.js POST each payload over keep-alive HTTP/1.1 (a non-2xx fails the attempt),
jobs removed on completion; --bullmq-warmup (2,000) other jobs go through the same workers first,
unmeasured. Measured like relay-egress's (first add to the simulator's count
reaching them all), with the CPU seconds of the same processes, BullMQ's Redis, workers and
producer; the summary gives each shape's delivered/s and relay-egress's ratio to the fastest.

Then it waits until every acknowledged delivery arrived (or --stall-timeout seconds without a new
one), --settle seconds more (late duplicates), and prints one JSON summary and a short table:
acknowledged, arrived, missing (acknowledged, never arrived: must be 0), duplicates (same
delivery id sent again, or another id: intake stored it twice), order violations (an arrival
whose sequence number is below one already seen for its URL, duplicates not counted), per URL the
longest gap between arrivals (max and p50 over URLs), wall time, delivered/s, intake latency
(each answered post) and the wait for acknowledgement (retries included). Exit status 1 when one
went missing. Everything it started is stopped at exit (also on Ctrl-C); the nodes' logs and
configs, summary.json and arrivals.tsv (every accepted request: time since the start, URL, seq,
phase, node, delivery id, acknowledged) stay in the temp dir it prints (--keep: the stores too). Builds nothing: run
./dev build first.

Usage: bench/cluster_failover.py [BUILD_DIR] [--nodes 3] [--urls 30] [--deliveries 6000]
         [--kill-after 1500] [--mode kill|stop|pg-kill|none] [--no-limit] [--rate 200]
         [--sink sim|python] [--bullmq [--bullmq-shapes 1x64,2x64]] ...
       (--help lists every option)
"""

import argparse
import collections
import http.client
import http.server
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
import bullmq_baseline  # noqa: E402
import pg_local  # noqa: E402
import proc_cpu  # noqa: E402
import scale_support  # noqa: E402
import sim_sink  # noqa: E402

TOKEN = "cluster-failover-admin-token-0123456789"
TENANT = "bench"
AGENT = "relay-egress-bench/"


def log(text):
    print("[cluster_failover +%.1fs] %s" % (time.monotonic() - T0, text), file=sys.stderr,
          flush=True)


T0 = time.monotonic()


# ---------------------------------------------------------------------------------------------
# The receiver


class Arrivals:
    """Every request the receiver accepted: (time, url index, seq, phase, node, webhook-id, sent
    time), in arrival order; and the 429s it answered, by node."""

    def __init__(self, urls, limit):
        self.lock = threading.Lock()
        self.log = []
        self.distinct = set()
        self.limit = limit
        self.windows = [collections.deque() for _ in range(urls)]
        self.refused = collections.Counter()
        self.unparsed = 0
        self.by_node = collections.Counter()

    def record(self, u, body, node, webhook_id):
        """The status to answer: 200, or 429 past the URL's limit in the last second."""
        now = time.monotonic()
        try:
            payload = json.loads(body)
            key = (int(payload["u"]), int(payload["seq"]))
            phase, sent = int(payload.get("p", 1)), float(payload["t"])
        except (ValueError, KeyError, TypeError):
            with self.lock:
                self.unparsed += 1
            return 200
        with self.lock:
            if self.limit and 0 <= u < len(self.windows):
                window = self.windows[u]
                while window and window[0] <= now - 1.0:
                    window.popleft()
                if len(window) >= self.limit:
                    self.refused[node] += 1
                    return 429
                window.append(now)
            self.log.append((now, key[0], key[1], phase, node, webhook_id, sent))
            self.distinct.add(key)
            self.by_node[node] += 1
        return 200

    def snapshot(self):
        with self.lock:
            return list(self.log)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        agent = self.headers.get("User-Agent", "")
        node = agent[len(AGENT):] if agent.startswith(AGENT) else "?"
        try:
            u = int(self.path.rsplit("/", 1)[1])
        except ValueError:
            u = -1
        status = self.server.arrivals.record(u, body, node, self.headers.get("webhook-id", ""))
        self.send_response(status)
        if status == 429:
            self.send_header("Retry-After", "1")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def start_receiver(urls, limit):
    server = scale_support.ReceiverServer(("127.0.0.1", 0), Handler)  # backlog 256, threaded
    server.arrivals = Arrivals(urls, limit)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# ---------------------------------------------------------------------------------------------
# The processes


def wait_port(port, seconds=10):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def start_redis(tmp, name="redis"):
    port = pg_local.free_port()
    out = open(os.path.join(tmp, name + ".log"), "ab")
    child = subprocess.Popen(
        ["/usr/bin/setpriv", "--pdeathsig=KILL", "redis-server", "--port", str(port), "--bind",
         "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", tmp],
        stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True)
    if not wait_port(port):
        raise RuntimeError("redis-server did not start (see %s/%s.log)" % (tmp, name))
    return child, port


class Node:
    """One `relay-egress serve`, started (and started again) from the main thread only: the
    kernel's parent-death signal follows the thread that started it."""

    def __init__(self, index, build, tmp):
        self.index = index
        self.name = "node%d" % index
        self.build = build
        self.port = pg_local.free_port()
        self.config = os.path.join(tmp, self.name + ".toml")
        self.log = os.path.join(tmp, self.name + ".log")
        self.data_dir = os.path.join(tmp, self.name + "-data")
        self.process = None
        self.down = False       # killed on purpose: not started again
        self.stopped = False    # SIGSTOPped
        self.ready = False
        self.exits = []          # "+<seconds since the start>: exit <status>", not asked for
        self.ready_changes = []  # "+<seconds since the start>: ready" or "not ready"
        self.restart_at = None

    def start(self):
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                ["/usr/bin/setpriv", "--pdeathsig=KILL", os.path.join(self.build, "relay-egress"),
                 "serve", "--config", self.config,
                 "--profiles-dir", os.path.join(HERE, "..", "config", "profiles")],
                stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True)

    def supervise(self):
        """Restart=always: a node that exited (not killed by us) starts again 0.5 s later."""
        if self.down or self.process is None:
            return
        if self.restart_at is not None:
            if time.monotonic() >= self.restart_at:
                self.restart_at = None
                self.start()
            return
        status = self.process.poll()
        if status is not None:
            self.exits.append("+%.2f s: exit %d" % (time.monotonic() - T0, status))
            log("%s exited with %d; starting it again in 0.5 s" % (self.name, status))
            self.restart_at = time.monotonic() + 0.5

    def signal(self, signo):
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signo)


def write_node_config(node, args, url, redis_port, receiver_limit):
    lines = [
        "[server]",
        'listen = "127.0.0.1:%d"' % node.port,
        'data_dir = "%s"' % node.data_dir,
        'admin_token = "%s"' % TOKEN,
        'secrets_key_file = "%s"' % os.path.join(os.path.dirname(node.config), "secrets.key"),
        "tenant_backlog_watermark = 10000000",
        # The script posts from one address with a connection per URL thread and node (300 with
        # --urls 300): past the default 64 per address a node would close them (by design).
        "max_connections_per_address = 0",
        'log_level = "%s"' % args.log_level,
        "[transport]",
        'user_agent = "%s%s"' % (AGENT, node.name),
        "[platforms.webhook]",
        "allow_private_networks = true",
    ]
    if args.no_limit:
        lines += ["max_in_flight_per_platform = 1024"]
        budgets = {"webhook_destination": (1000000, 100000), "tenant_egress": (1000000, 100000),
                   "tenant_intake": (1000000, 100000)}
    else:
        # The receiver's limit, paced 5 % under it (server.pacing_margin_percent).
        budgets = {"webhook_destination": (receiver_limit, 1)}
    for name, (limit, burst) in budgets.items():
        lines += ["[budgets.%s]" % name, "limit = %d" % limit, "scale_ms = 1000",
                  "burst = %d" % burst]
    if args.store == "postgres":
        lines += ["[store]", 'backend = "postgres"', 'url = "%s"' % url] + args.store_line
    else:
        lines += ["[store]", 'backend = "rocksdb"'] + args.store_line
    lines += ["[cluster]", 'redis_url = "redis://127.0.0.1:%d"' % redis_port,
              'node_id = "%s"' % node.name, "expected_nodes = %d" % args.nodes]
    lines += args.cluster_line
    lines += ["[tenants.%s.credentials.hooks]" % TENANT, 'platform = "webhook"',
              'secret = "%s"' % scale_support.SECRET]
    with open(node.config, "w") as f:
        f.write("\n".join(lines) + "\n")


class Readiness(threading.Thread):
    """Polls every node's /readyz every 0.2 s (1 s timeout): a standby does not listen, a stopped
    node does not answer."""

    def __init__(self, nodes):
        super().__init__(daemon=True)
        self.nodes = nodes
        self.done = False

    def run(self):
        while not self.done:
            for node in self.nodes:
                ready = False
                if not node.down:
                    try:
                        c = http.client.HTTPConnection("127.0.0.1", node.port, timeout=1)
                        c.request("GET", "/readyz")
                        ready = c.getresponse().status == 200
                        c.close()
                    except (OSError, http.client.HTTPException):
                        pass
                if ready != node.ready:
                    node.ready = ready
                    node.ready_changes.append("+%.2f s: %s" % (
                        time.monotonic() - T0, "ready" if ready else "not ready"))
            time.sleep(0.2)


# ---------------------------------------------------------------------------------------------
# Intake


def sim_delivery(sink, u, seq, phase):
    """URL u's delivery `seq` to the simulator: its receiver /hooks/u<u>, and a payload whose
    msg_id (the idempotency key), seq and ordering_key the simulator checks."""
    return sink.hook("u%d" % u), {"u": u, "seq": seq, "p": phase, "t": time.monotonic(),
                                  "msg_id": "u%d-%d" % (u, seq), "ordering_key": "u%d" % u}


class Intake:
    """Posts deliveries to the ready nodes and remembers what was acknowledged."""

    def __init__(self, args, nodes, hook_base, sink=None):
        self.args = args
        self.nodes = nodes
        self.hook_base = hook_base
        self.sink = sink         # a SimSink, or None: this script's receiver
        self.lock = threading.Lock()
        self.acked = {}          # (u, seq) -> ack time
        self.gave_up = []        # (u, seq) never acknowledged
        self.latencies = {0: [], 1: []}  # phase -> seconds of each answered post
        self.ack_waits = []      # seconds from a delivery's time to its acknowledgement
        self.failures = collections.Counter()
        self.rejections = []     # unexpected answers (status, body)
        self.next_seq = [0] * args.urls
        self.first_post = None

    def item(self, u, seq, phase):
        if self.sink is None:
            destination = "%s/u/%d" % (self.hook_base, u)
            payload = {"u": u, "seq": seq, "p": phase, "t": time.monotonic()}
        else:
            destination, payload = sim_delivery(self.sink, u, seq, phase)
        item = {"tenant": TENANT, "platform": "webhook", "credential": "hooks",
                "destination": destination, "payload": payload,
                "idempotency_key": "u%d-%d" % (u, seq)}
        if not self.args.no_ordering_key:
            item["ordering_key"] = "u%d" % u
        return item

    def post(self, conns, turn, path, body, phase):
        """Posts `body` until a node acknowledges it; the answer's JSON, or None (gave up)."""
        started = time.monotonic()
        attempt = 0
        while time.monotonic() - started < self.args.post_deadline:
            ready = [n for n in self.nodes if n.ready]
            if not ready:
                time.sleep(0.05)
                continue
            node = ready[(turn + attempt) % len(ready)]
            attempt += 1
            conn = conns.get(node.index)
            if conn is None:
                conn = conns[node.index] = http.client.HTTPConnection(
                    "127.0.0.1", node.port, timeout=self.args.intake_timeout)
            t = time.monotonic()
            try:
                conn.request("POST", path, body, {"Authorization": "Bearer " + TOKEN,
                                                  "Content-Type": "application/json"})
                res = conn.getresponse()
                text = res.read()
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                del conns[node.index]
                with self.lock:
                    self.failures[type(e).__name__] += 1
                time.sleep(0.02)
                continue
            if res.status in (200, 202):
                with self.lock:
                    self.latencies[phase].append(time.monotonic() - t)
                return json.loads(text)
            with self.lock:
                self.failures[str(res.status)] += 1
            if res.status in (429, 503, 207):
                time.sleep(min(1.0, float(res.getheader("Retry-After") or 0.1)))
                continue
            with self.lock:
                if len(self.rejections) < 5:
                    self.rejections.append((res.status, text.decode(errors="replace")[:300]))
            return None
        return None

    def lane(self, u, count, start, rate, phase):
        """URL u's deliveries, one after another: the k-th at start + (k * urls + u) / rate."""
        try:
            self._lane(u, count, start, rate, phase)
        except Exception as e:  # noqa: BLE001 (a lane that dies must say so, not vanish)
            log("URL %d's posting thread failed: %r" % (u, e))
            with self.lock:
                self.failures["lane_failed"] += 1

    def _lane(self, u, count, start, rate, phase):
        conns = {}
        for k in range(count):
            i = k * self.args.urls + u
            if rate > 0:
                time.sleep(max(0.0, start + i / rate - time.monotonic()))
            with self.lock:
                seq = self.next_seq[u]
                self.next_seq[u] += 1
            due = time.monotonic()
            body = json.dumps(self.item(u, seq, phase))
            # i + i // urls: consecutive deliveries of one URL go to different nodes.
            answer = self.post(conns, i + i // self.args.urls, "/v1/deliveries", body, phase)
            with self.lock:
                if answer is None:
                    self.gave_up.append((u, seq))
                else:
                    self.acked[(u, seq)] = time.monotonic()
                    self.ack_waits.append(time.monotonic() - due)
        for c in conns.values():
            c.close()

    def paced(self, total, rate, phase):
        """Starts the URL lanes for `total` deliveries at `rate`/s: their threads."""
        start = time.monotonic()
        if self.first_post is None:
            self.first_post = start
        lanes = []
        for u in range(self.args.urls):
            count = len(range(u, total, self.args.urls))
            t = threading.Thread(target=self.lane, args=(u, count, start, rate, phase),
                                 daemon=True)
            t.start()
            lanes.append(t)
        return lanes

    def batches(self, total, size):
        """Posts `total` deliveries in batches of `size`, one batch after another (so each URL's
        sequence numbers are stored in order), as fast as the nodes take them."""
        conns = {}
        self.first_post = self.first_post or time.monotonic()
        for b, first in enumerate(range(0, total, size)):
            items = []
            for i in range(first, min(total, first + size)):
                u = i % self.args.urls
                items.append(self.item(u, self.next_seq[u], 0))
                self.next_seq[u] += 1
            answer = self.post(conns, b, "/v1/deliveries/batch", json.dumps({"deliveries": items}),
                               0)
            now = time.monotonic()
            with self.lock:
                for item in items:
                    key = (item["payload"]["u"], item["payload"]["seq"])
                    if answer is None:
                        self.gave_up.append(key)
                    else:
                        self.acked[key] = now
        for c in conns.values():
            c.close()


# ---------------------------------------------------------------------------------------------
# The summary


def quantile(values, q):
    return round(scale_support.quantile(values, q), 4) if values else None


def ms(values, q):
    v = quantile(values, q)
    return None if v is None else round(1000 * v, 1)


def add_intake_figures(summary, intake, wall):
    """The run's wall time, delivered/s and the single posts' figures, into `summary`."""
    summary["wall_s"] = round(wall, 2)
    summary["delivered_per_s"] = round(summary["arrived"] / wall, 1) if wall > 0 else None
    summary["intake_p50_ms"] = ms(intake.latencies[1], 0.5)
    summary["intake_p99_ms"] = ms(intake.latencies[1], 0.99)
    summary["intake_max_ms"] = round(1000 * max(intake.latencies[1]), 1) \
        if intake.latencies[1] else None
    summary["ack_wait_p99_ms"] = ms(intake.ack_waits, 0.99)
    summary["ack_wait_max_ms"] = round(1000 * max(intake.ack_waits), 1) \
        if intake.ack_waits else None
    summary["intake_failures"] = dict(intake.failures)
    summary["intake_gave_up"] = len(intake.gave_up)
    summary["intake_rejections"] = intake.rejections


def report_statements(primary, tmp):
    """With --pg-setting shared_preload_libraries=pg_stat_statements: the statements by the
    server's time (execution, and planning with pg_stat_statements.track_planning=on), into
    pg_stat_statements.txt in the run's directory."""
    try:
        primary.sql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements", pg_local.DATABASE)
        text = primary.sql(
            "SELECT calls || ' calls, ' || round(total_exec_time::numeric) || ' ms executing, ' "
            "|| round(total_plan_time::numeric) || ' ms planning, ' || rows || ' rows: ' || "
            "left(regexp_replace(query, '\\s+', ' ', 'g'), 160) FROM pg_stat_statements "
            "ORDER BY total_exec_time + total_plan_time DESC LIMIT 30", pg_local.DATABASE)
    except Exception as e:  # a report, not the run's verdict
        log("pg_stat_statements: %s" % e)
        return
    path = os.path.join(tmp, "pg_stat_statements.txt")
    with open(path, "w") as f:
        f.write(text + "\n")
    log("the server's statements by time: %s" % path)


def verdict_rows(summary):
    """The table's first rows, what every run must show: acknowledged, arrived, missing,
    duplicates, order violations."""
    return [("acknowledged", summary["acknowledged"]), ("arrived", summary["arrived"]),
            ("missing (must be 0)", summary["missing"]),
            ("duplicates (same delivery / another)", "%d (%d / %d)" % (
                summary["duplicates"], summary["duplicates_same_delivery"],
                summary["duplicates_other_delivery"])),
            ("order violations (URLs)", "%d (%d)" % (summary["order_violations"],
                                                     summary["urls_with_order_violations"]))]


def analyse(log_, acked, urls, action_t, cont_t, victim, stop_s):
    """What the arrivals say: see the module's comment."""
    first = {}                     # (u, seq) -> its first arrival's (t, node, webhook id)
    max_seq = [-1] * urls
    violations = collections.Counter()
    dup_same, dup_other = 0, 0
    last_arrival = {}              # (u, phase) -> t
    gaps = collections.defaultdict(float)
    across = {}                    # u -> the gap spanning the action
    e2e = []
    by_node_before, by_node_after = collections.Counter(), collections.Counter()
    served_during_stop = set()     # URLs another node sent to while the victim was stopped
    late = []                      # the victim's arrivals after SIGCONT: (t, u, dup, violation)
    # The first few of each, times from the action (else the first arrival).
    zero = action_t if action_t is not None else (log_[0][0] if log_ else 0.0)
    examples = {"duplicates": [], "order_violations": []}

    def example(kind, t, u, seq, node, wid, note):
        if len(examples[kind]) < 10:
            examples[kind].append("u%d seq %d from %s at %+.3f s, delivery %s: %s" % (
                u, seq, node, t - zero, wid, note))
    for t, u, seq, phase, node, wid, sent in log_:
        key = (u, seq)
        dup = key in first
        violation = False
        if dup:
            if wid and wid == first[key][2]:
                dup_same += 1
            else:
                dup_other += 1
            example("duplicates", t, u, seq, node, wid, "first from %s at %+.3f s, delivery %s" % (
                first[key][1], first[key][0] - zero, first[key][2]))
        else:
            first[key] = (t, node, wid)
            e2e.append(t - sent)
            if seq < max_seq[u]:
                violations[u] += 1
                violation = True
                example("order_violations", t, u, seq, node, wid,
                        "after seq %d" % max_seq[u])
            max_seq[u] = max(max_seq[u], seq)
        prev = last_arrival.get((u, phase))
        if prev is not None:
            gaps[u] = max(gaps[u], t - prev)
            if action_t is not None and prev < action_t <= t:
                across[u] = t - prev
        last_arrival[(u, phase)] = t
        (by_node_before if action_t is None or t < action_t else by_node_after)[node] += 1
        if cont_t is not None:
            if action_t <= t < cont_t and node != victim:
                served_during_stop.add(u)
            if t >= cont_t and node == victim:
                late.append((t, u, dup, violation))
    arrived = set(first)
    missing = sorted(set(acked) - arrived)
    ends = [first[k][0] for k in arrived]
    summary = {
        "acknowledged": len(acked),
        "arrived": len(arrived & set(acked)),
        "arrived_unacknowledged": len(arrived - set(acked)),
        "missing": len(missing),
        "missing_first": [list(k) for k in missing[:10]],
        "duplicates": dup_same + dup_other,
        "duplicates_same_delivery": dup_same,
        "duplicates_other_delivery": dup_other,
        "order_violations": sum(violations.values()),
        "order_violations_max_per_url": max(violations.values()) if violations else 0,
        "urls_with_order_violations": len(violations),
        "gap_max_s": round(max(gaps.values()), 3) if gaps else None,
        "gap_p50_s": quantile(list(gaps.values()), 0.5),
        "examples": examples,
        "e2e_p50_ms": ms(e2e, 0.5),
        "e2e_p99_ms": ms(e2e, 0.99),
        "e2e_max_ms": round(1000 * max(e2e), 1) if e2e else None,
        "arrivals_by_node_before_action": dict(by_node_before),
        "arrivals_by_node_after_action": dict(by_node_after),
        "last_arrival": max(ends) if ends else None,
    }
    if action_t is not None:
        summary["gap_across_action_max_s"] = round(max(across.values()), 3) if across else None
        summary["gap_across_action_p50_s"] = quantile(list(across.values()), 0.5)
        summary["urls_with_gap_across_action"] = len(across)
    if cont_t is not None:
        foreign = [x for x in late if x[1] in served_during_stop]
        summary["stop"] = {
            "stopped_s": stop_s,
            "urls_served_by_others_while_stopped": len(served_during_stop),
            "victim_arrivals_after_cont": len(late),
            "victim_arrivals_after_cont_to_urls_others_served": len(foreign),
            "of_which_duplicates": sum(1 for x in foreign if x[2]),
            "of_which_order_violations": sum(1 for x in foreign if x[3]),
            "victim_duplicates_after_cont": sum(1 for x in late if x[2]),
            "last_such_arrival_after_cont_s":
                round(max(x[0] for x in foreign) - cont_t, 3) if foreign else None,
        }
    return summary


# ---------------------------------------------------------------------------------------------


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("build", nargs="?", default=os.path.join(HERE, "..", "build"))
    p.add_argument("--nodes", type=int, default=3)
    p.add_argument("--urls", type=int, default=30)
    p.add_argument("--deliveries", type=int, default=None,
                   help="deliveries posted (--no-limit: in batches): default 6,000, with "
                   "--sink sim 30,000")
    p.add_argument("--kill-after", type=int, default=1500, help="arrivals before the action")
    p.add_argument("--mode", choices=("kill", "stop", "pg-kill", "none"), default="kill")
    p.add_argument("--victim", default="busiest",
                   help='node number (1..N) or "busiest" (sent most so far): default busiest')
    p.add_argument("--stop-seconds", type=float, default=15.0)
    p.add_argument("--no-limit", action="store_true",
                   help="no per-URL limit at the receiver, every budget out of the way")
    p.add_argument("--url-limit", type=int, default=10, help="requests per second per URL")
    p.add_argument("--rate", type=float, default=200.0, help="posts per second (0: at once)")
    p.add_argument("--batch", type=int, default=100, help="--no-limit: deliveries per batch")
    p.add_argument("--probe-seconds", type=float, default=10.0,
                   help="--no-limit: seconds of single posts at --rate after the batches")
    p.add_argument("--sink", choices=("sim", "python"), default=None,
                   help="where the deliveries go: sim (build/relay-egress-sim's /hooks/u<i>; "
                   "the default with --no-limit, which it needs) or python (this script's "
                   "receiver, /u/<i>: the default otherwise)")
    p.add_argument("--sim-threads", type=int, default=1, help="--sink sim: its --threads")
    p.add_argument("--bullmq", action="store_true",
                   help="--sink sim: first the same deliveries through BullMQ on a Redis of its "
                   "own (bench/bullmq/), then relay-egress's; both figures and their ratio")
    p.add_argument("--bullmq-shapes", default="1x64",
                   help="BullMQ worker processes x concurrency each, comma-separated (e.g. "
                   "1x64,2x64,1x256): each is run; the ratio is to the fastest")
    p.add_argument("--bullmq-warmup", type=int, default=2000,
                   help="jobs through BullMQ's workers before each measured run (unmeasured)")
    p.add_argument("--no-ordering-key", action="store_true")
    p.add_argument("--store", choices=("postgres", "rocksdb"), default="postgres",
                   help="rocksdb: each node its own store (a baseline; no PostgreSQL)")
    p.add_argument("--pg-standby", action="store_true",
                   help="a synchronous streaming standby (implied by --mode pg-kill)")
    p.add_argument("--pg-no-fsync", action="store_true")
    p.add_argument("--pg-setting", action="append", default=[], metavar="NAME=VALUE",
                   help="a setting of the primary's (postgres -c), e.g. "
                        "shared_preload_libraries=pg_stat_statements; repeatable")
    p.add_argument("--intake-timeout", type=float, default=2.0)
    p.add_argument("--post-deadline", type=float, default=120.0)
    p.add_argument("--stall-timeout", type=float, default=120.0)
    p.add_argument("--settle", type=float, default=3.0)
    p.add_argument("--store-line", action="append", default=[],
                   help="a line added to every node's [store] (repeatable)")
    p.add_argument("--cluster-line", action="append", default=[],
                   help="a line added to every node's [cluster] (repeatable)")
    p.add_argument("--log-level", default="info",
                   help='the nodes\' server.log_level ("debug": an event per attempt)')
    p.add_argument("--keep", action="store_true", help="keep the stores, not only the logs")
    args = p.parse_args()
    if args.mode == "pg-kill":
        args.pg_standby = True
    if args.store == "rocksdb" and (args.mode == "pg-kill" or args.pg_standby):
        p.error("--mode pg-kill and --pg-standby need --store postgres")
    if args.no_limit and args.mode != "none":
        p.error("--no-limit is the throughput shape: --mode none")
    if args.sink is None:
        args.sink = "sim" if args.no_limit else "python"
    if args.sink == "sim" and not args.no_limit:
        p.error("--sink sim is for the throughput shape: --mode none --no-limit")
    if args.bullmq and args.sink != "sim":
        p.error("--bullmq needs --sink sim")
    if args.deliveries is None:
        args.deliveries = 30000 if args.sink == "sim" else 6000
    try:
        args.bullmq_shapes = bullmq_baseline.parse_shapes(args.bullmq_shapes)
    except ValueError:
        p.error("--bullmq-shapes: e.g. 1x64,2x256")
    return args


def interrupt(*_):
    raise KeyboardInterrupt()


def main():
    args = parse_args()
    build = os.path.abspath(args.build)
    if not os.access(os.path.join(build, "relay-egress"), os.X_OK):
        sys.exit("missing %s/relay-egress: run ./dev build" % build)
    tmp = tempfile.mkdtemp(prefix="cluster-failover-")
    os.chmod(tmp, 0o711)  # PostgreSQL runs as "nobody" under it when we are root
    log("logs and configs in %s" % tmp)
    # Ctrl-C and SIGTERM (also when started in the background): the finally below stops all.
    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGINT, interrupt)
    nodes, children, servers = [], [], []
    receiver = sink = None
    readiness = None
    primary = None
    result = 2
    try:
        standby = url = None
        if args.store == "postgres":
            primary = pg_local.Server(os.path.join(tmp, "pg-primary"),
                                      fsync=not args.pg_no_fsync)
            servers.append(primary)
            primary.start(args.pg_setting)
            url = primary.create_database()
        if args.pg_standby:
            standby = pg_local.Standby(primary, os.path.join(tmp, "pg-standby"))
            servers.append(standby)
            standby.start()
            standby.sync()
            url = pg_local.failover_url(primary, standby)
        if url:
            log("postgres: %s" % url)
        redis, redis_port = start_redis(tmp)
        children.append(redis)
        bullmq_redis = None
        if args.bullmq:
            bullmq_baseline.install(log)
            bullmq_redis = start_redis(tmp, "redis-bullmq")
            children.append(bullmq_redis[0])
        if args.sink == "sim":
            sink = sim_sink.SimSink(build, os.path.join(tmp, "sim.log"), args.sim_threads)
            hook_base = sink.base
            log("sink: relay-egress-sim on %s" % hook_base)
        else:
            limit = 0 if args.no_limit else args.url_limit
            receiver = start_receiver(args.urls, limit)
            hook_base = "http://127.0.0.1:%d" % receiver.server_address[1]
        with open(os.path.join(tmp, "secrets.key"), "w") as f:
            f.write(secrets.token_hex(32) + "\n")
        os.chmod(os.path.join(tmp, "secrets.key"), 0o600)
        for i in range(1, args.nodes + 1):
            node = Node(i, build, tmp)
            write_node_config(node, args, url, redis_port, args.url_limit)
            nodes.append(node)
            node.start()
        readiness = Readiness(nodes)
        readiness.start()
        deadline = time.monotonic() + 60
        while not any(n.ready for n in nodes):
            for n in nodes:
                n.supervise()
            if time.monotonic() > deadline:
                raise RuntimeError("no node became ready in 60 s (see %s/node*.log)" % tmp)
            time.sleep(0.1)
        time.sleep(1.0)  # the others' first answers (standbys stay unready)
        log("ready: %s" % " ".join("%s:%d%s" % (n.name, n.port, "" if n.ready else "(not ready)")
                                   for n in nodes))
        if sink is not None:
            result = run_sim(args, tmp, nodes, sink, primary, redis, bullmq_redis)
        else:
            result = run(args, tmp, nodes, receiver.arrivals, hook_base, primary, standby)
    except KeyboardInterrupt:
        log("interrupted")
    finally:
        if readiness is not None:
            readiness.done = True
        for n in nodes:
            n.down = True
            n.signal(signal.SIGCONT)
            n.signal(signal.SIGTERM)
        for n in nodes:
            if n.process is not None:
                try:
                    n.process.wait(5)
                except subprocess.TimeoutExpired:
                    n.process.kill()
                    n.process.wait()
        for c in children:
            c.terminate()
            c.wait()
        if primary is not None and any("pg_stat_statements" in x for x in args.pg_setting):
            report_statements(primary, tmp)
        for s in reversed(servers):
            s.stop()
        if receiver is not None:
            receiver.shutdown()
        if sink is not None:
            sink.stop()
        if not args.keep:
            for name in ["pg-primary/data", "pg-standby/data"] + [n.name + "-data" for n in nodes]:
                subprocess.run(["rm", "-rf", os.path.join(tmp, name)], check=False)
        log("logs in %s" % tmp)
    sys.exit(result)


def run(args, tmp, nodes, arrivals, hook_base, primary, standby):
    intake = Intake(args, nodes, hook_base)
    action_t = cont_t = None
    victim = None
    promoted_s = None

    def tick():
        """The main thread's round: supervise the nodes, act and continue when it is time."""
        nonlocal cont_t
        for n in nodes:
            n.supervise()
        if args.mode != "none" and action_t is None and len(arrivals.distinct) >= args.kill_after:
            act()
        if (args.mode == "stop" and action_t is not None and cont_t is None
                and time.monotonic() >= action_t + args.stop_seconds):
            victim.signal(signal.SIGCONT)
            victim.stopped = False
            cont_t = time.monotonic()
            log("%s continued (SIGCONT)" % victim.name)
        progress()

    def progress(last=[0.0]):
        if time.monotonic() - last[0] >= 5:
            last[0] = time.monotonic()
            log("arrived %d (distinct %d) acknowledged %d ready %s" % (
                len(arrivals.log), len(arrivals.distinct), len(intake.acked),
                ",".join(n.name for n in nodes if n.ready) or "none"))

    def act():
        nonlocal action_t, victim, promoted_s
        if args.mode == "pg-kill":
            action_t = time.monotonic()
            primary.kill()
            log("postgres primary killed (SIGKILL) after %d arrivals; promoting the standby"
                % len(arrivals.distinct))

            def promote():  # on a thread of its own: the nodes' supervision goes on meanwhile
                nonlocal promoted_s
                standby.promote()
                promoted_s = round(time.monotonic() - action_t, 3)
                log("standby promoted in %.2f s" % promoted_s)
            threading.Thread(target=promote, daemon=True).start()
            return
        if args.victim == "busiest":
            with arrivals.lock:
                counts = collections.Counter(arrivals.by_node)
            target = max((n for n in nodes if not n.down),
                         key=lambda n: (counts.get(n.name, 0), n.index == 2))
        else:
            target = nodes[int(args.victim) - 1]
        victim = target
        action_t = time.monotonic()
        if args.mode == "kill":
            target.down = True
            target.signal(signal.SIGKILL)
            log("%s killed (SIGKILL) after %d arrivals" % (target.name, len(arrivals.distinct)))
        else:
            target.stopped = True
            target.signal(signal.SIGSTOP)
            log("%s stopped (SIGSTOP) after %d arrivals, for %.0f s" % (
                target.name, len(arrivals.distinct), args.stop_seconds))

    def wait_for(threads):
        """Until the posting threads end (and a stopped victim was continued)."""
        while any(t.is_alive() for t in threads) or (
                args.mode == "stop" and action_t is not None and cont_t is None):
            tick()
            time.sleep(0.05)

    def drain():
        """Until every acknowledged delivery arrived, or --stall-timeout without a new one."""
        seen, changed = -1, time.monotonic()
        while True:
            tick()
            with arrivals.lock:
                distinct = set(arrivals.distinct)
            with intake.lock:
                acked = list(intake.acked)
            if all(k in distinct for k in acked) and (action_t is None or args.mode != "stop"
                                                     or cont_t is not None):
                return True
            if len(distinct) != seen:
                seen, changed = len(distinct), time.monotonic()
            if time.monotonic() - changed > args.stall_timeout:
                log("no new arrival for %.0f s: giving up" % args.stall_timeout)
                return False
            time.sleep(0.05)

    throughput = None
    if args.no_limit:
        log("posting %d deliveries in batches of %d" % (args.deliveries, args.batch))
        t0 = time.monotonic()
        batcher = threading.Thread(target=intake.batches, args=(args.deliveries, args.batch),
                                   daemon=True)
        batcher.start()
        wait_for([batcher])
        accepted_s = time.monotonic() - t0
        drain()
        last = max((a[0] for a in arrivals.snapshot() if a[3] == 0), default=t0)
        throughput = {
            "deliveries": args.deliveries,
            "posted_in_s": round(accepted_s, 2),
            "accepted_per_s": round(args.deliveries / accepted_s, 1),
            "delivered_in_s": round(last - t0, 2),
            "delivered_per_s": round(args.deliveries / (last - t0), 1) if last > t0 else None,
            "batch_intake_p50_ms": ms(intake.latencies[0], 0.5),
            "batch_intake_p99_ms": ms(intake.latencies[0], 0.99),
        }
        log("throughput: %s" % json.dumps(throughput))
        total = int(args.probe_seconds * args.rate)
    else:
        total = args.deliveries
    log("posting %d deliveries at %s/s over %d URLs, mode %s" % (
        total, args.rate or "max", args.urls, args.mode))
    wait_for(intake.paced(total, args.rate, 1))
    complete = drain()
    settle_until = time.monotonic() + args.settle
    while time.monotonic() < settle_until:
        tick()
        time.sleep(0.05)
    posted = total + (args.deliveries if args.no_limit else 0)

    log_ = arrivals.snapshot()
    summary = {
        "mode": args.mode, "nodes": args.nodes, "urls": args.urls, "posted": posted,
        "rate_per_s": args.rate, "url_limit_per_s": 0 if args.no_limit else args.url_limit,
        "ordering_key": not args.no_ordering_key, "pg_standby": args.pg_standby,
        "complete": complete,
    }
    summary.update(analyse(log_, intake.acked, args.urls, action_t, cont_t,
                           victim.name if victim else None, args.stop_seconds))
    end = summary.pop("last_arrival") or time.monotonic()
    add_intake_figures(summary, intake, end - intake.first_post)
    summary["receiver_429s"] = sum(arrivals.refused.values())
    summary["receiver_429s_by_node"] = dict(arrivals.refused)
    summary["unparsed_arrivals"] = arrivals.unparsed
    if throughput:
        summary["throughput"] = throughput
    if action_t is not None:
        summary["action_at_s"] = round(action_t - T0, 2)
        summary["victim"] = victim.name if victim else "postgres primary"
        if promoted_s is not None:
            summary["standby_promoted_in_s"] = promoted_s
    summary["node_exits"] = {n.name: n.exits for n in nodes if n.exits}
    summary["node_ready_changes"] = {n.name: n.ready_changes for n in nodes}
    summary["logs"] = tmp
    with open(os.path.join(tmp, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    with open(os.path.join(tmp, "arrivals.tsv"), "w") as f:
        f.write("t_s\turl\tseq\tphase\tnode\twebhook_id\tacknowledged\n")
        for t, u, seq, phase, node, wid, _ in log_:
            f.write("%.4f\t%d\t%d\t%d\t%s\t%s\t%d\n" % (t - T0, u, seq, phase, node, wid,
                                                       (u, seq) in intake.acked))
    print(json.dumps(summary, indent=1))
    rows = verdict_rows(summary) + [
            ("longest gap per URL: max / p50 (s)", "%s / %s" % (summary["gap_max_s"],
                                                                summary["gap_p50_s"])),
            ("wall time (s)", summary["wall_s"]), ("delivered/s", summary["delivered_per_s"]),
            ("intake p50 / p99 (ms)", "%s / %s" % (summary["intake_p50_ms"],
                                                   summary["intake_p99_ms"])),
            ("receiver 429s", summary["receiver_429s"])]
    if "gap_across_action_max_s" in summary:
        rows.append(("gap across the action: max / p50 (s)", "%s / %s" % (
            summary["gap_across_action_max_s"], summary["gap_across_action_p50_s"])))
    if "stop" in summary:
        s = summary["stop"]
        rows.append(("victim after CONT to URLs others served (dups)", "%d (%d)" % (
            s["victim_arrivals_after_cont_to_urls_others_served"], s["of_which_duplicates"])))
    if throughput:
        rows.append(("batches: delivered/s (accepted/s)", "%s (%s)" % (
            throughput["delivered_per_s"], throughput["accepted_per_s"])))
    for name, value in rows:
        print("%-48s %s" % (name, value))
    return 0 if summary["missing"] == 0 and complete else 1


def cpu_groups(nodes, primary, redis, sink):
    """{name: CPU seconds so far} of the processes of a --sink sim run: each node, PostgreSQL
    (the postmaster and its backends), the nodes' Redis, the simulator and this script (the
    intake)."""
    groups = {}
    for n in nodes:
        groups[n.name] = (lambda node: lambda: proc_cpu.seconds(node.process.pid))(n)
    if primary is not None:
        groups["postgres"] = lambda: proc_cpu.tree_seconds(primary.process.pid)
    groups["redis"] = lambda: proc_cpu.seconds(redis.pid)
    groups["sim"] = lambda: proc_cpu.seconds(sink.process.pid)
    groups["this script (intake, polls)"] = proc_cpu.self_seconds
    return groups


def run_sim(args, tmp, nodes, sink, primary, redis, bullmq_redis):
    """--sink sim (the throughput shape): with --bullmq first the same deliveries through BullMQ,
    then the batches as fast as the nodes take them, then --probe-seconds of single posts at
    --rate; the verdict from the simulator's counts."""
    intake = Intake(args, nodes, sink.base, sink)
    cpu = cpu_groups(nodes, primary, redis, sink)

    def tick():
        for n in nodes:
            n.supervise()

    def deliver(what):
        """Until the simulator accepted every acknowledged delivery: the time it saw that."""
        done = sink.wait_accepted(len(intake.acked), args.stall_timeout, tick=tick)
        if done is None:
            log("%s: nothing new accepted for %.0f s: giving up" % (what, args.stall_timeout))
        return done

    bullmq = []
    if args.bullmq:
        jobs = []
        for i in range(args.deliveries):
            url, payload = sim_delivery(sink, i % args.urls, i // args.urls, 0)
            jobs.append({"url": url, "payload": payload})
        for shape in args.bullmq_shapes:
            log("BullMQ %s, %d worker process(es) x concurrency %d: %d deliveries, addBulk of %d"
                % (bullmq_baseline.version(), shape[0], shape[1], len(jobs), args.batch))
            bullmq.append(bullmq_baseline.run(jobs, shape, args.batch, bullmq_redis, sink, tmp,
                                              args.stall_timeout, cpu, log, args.bullmq_warmup))
            tick()
    sink.reset()

    log("posting %d deliveries in batches of %d" % (args.deliveries, args.batch))
    before = proc_cpu.snapshot(cpu)
    t0 = time.monotonic()
    batcher = threading.Thread(target=intake.batches, args=(args.deliveries, args.batch),
                               daemon=True)
    batcher.start()
    while batcher.is_alive():
        tick()
        time.sleep(0.05)
    accepted_s = time.monotonic() - t0
    done = deliver("batches")
    after = proc_cpu.snapshot(cpu)
    acked = len(intake.acked)
    throughput = {
        "deliveries": args.deliveries, "acknowledged": acked,
        "posted_in_s": round(accepted_s, 2),
        "accepted_per_s": round(acked / accepted_s, 1),
        "delivered_in_s": round(done - t0, 2) if done else None,
        "delivered_per_s": round(acked / (done - t0), 1) if done else None,
        "batch_intake_p50_ms": ms(intake.latencies[0], 0.5),
        "batch_intake_p99_ms": ms(intake.latencies[0], 0.99),
        "cpu_s": proc_cpu.difference(before, after),
    }
    throughput.update(sink.verdict(acked))
    log("throughput: %s" % json.dumps(throughput))

    total = int(args.probe_seconds * args.rate)
    log("posting %d deliveries at %s/s over %d URLs" % (total, args.rate or "max", args.urls))
    lanes = intake.paced(total, args.rate, 1)
    while any(t.is_alive() for t in lanes):
        tick()
        time.sleep(0.05)
    end = deliver("single posts")
    complete = done is not None and end is not None
    settle_until = time.monotonic() + args.settle
    while time.monotonic() < settle_until:
        tick()
        time.sleep(0.05)

    summary = {
        "mode": args.mode, "nodes": args.nodes, "store": args.store, "urls": args.urls,
        "posted": args.deliveries + total, "rate_per_s": args.rate, "url_limit_per_s": 0,
        "ordering_key": not args.no_ordering_key, "sink": "relay-egress-sim",
        "complete": complete,
    }
    summary.update(sink.verdict(len(intake.acked)))
    add_intake_figures(summary, intake, (end or time.monotonic()) - intake.first_post)
    summary["throughput"] = throughput
    if bullmq:
        best = max(bullmq, key=lambda r: r["delivered_per_s"] or 0)
        summary["bullmq"] = {"version": bullmq_baseline.version(), "runs": bullmq,
                             "best": "%dx%d" % (best["workers"], best["concurrency"])}
        if best["delivered_per_s"] and throughput["delivered_per_s"]:
            summary["ratio_to_bullmq"] = round(
                throughput["delivered_per_s"] / best["delivered_per_s"], 2)
    summary["node_exits"] = {n.name: n.exits for n in nodes if n.exits}
    summary["node_ready_changes"] = {n.name: n.ready_changes for n in nodes}
    summary["logs"] = tmp
    with open(os.path.join(tmp, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps(summary, indent=1))

    def cpu_line(cpu_s):
        return " ".join("%s %.1f" % (k, v) for k, v in cpu_s.items())

    rows = verdict_rows(summary) + [
            ("intake at %g/s: p50 / p99 (ms)" % args.rate, "%s / %s" % (
                summary["intake_p50_ms"], summary["intake_p99_ms"])),
            ("batches: delivered/s (accepted/s)", "%s (%s)" % (
                throughput["delivered_per_s"], throughput["accepted_per_s"])),
            ("batches: cpu s", cpu_line(throughput["cpu_s"]))]
    for r in bullmq:
        rows.append(("BullMQ %dx%d: delivered/s (missing, dups, order)" % (
            r["workers"], r["concurrency"]), "%s (%d, %d, %d)" % (
                r["delivered_per_s"], r["missing"], r["duplicates"], r["order_violations"])))
        rows.append(("BullMQ %dx%d: cpu s" % (r["workers"], r["concurrency"]),
                     cpu_line(r["cpu_s"])))
    if "ratio_to_bullmq" in summary:
        rows.append(("relay-egress / BullMQ %s delivered/s" % summary["bullmq"]["best"],
                     summary["ratio_to_bullmq"]))
    for name, value in rows:
        print("%-48s %s" % (name, value))
    return 0 if summary["missing"] == 0 and complete else 1


if __name__ == "__main__":
    main()
