#!/usr/bin/python3
"""A million queued deliveries over 100,000 destinations (issue 34, "memory that follows what
must be in memory").

Starts build/relay-egress-sim (every receiver answering 429 with a 10-hour Retry-After, so every
destination keeps its work after its first attempt) and build/relay-egress serve on free loopback
ports, with a temp config and store. Four client threads post TOTAL webhook deliveries in batches
of 1,000 round-robin over DESTINATIONS destinations of tenant acme. Then:
  1. intake: accepted/s, and the service's RSS at the end of intake and its peak;
  2. settled: the RSS once every destination's first attempt has been deferred;
  3. kill -9 and start again on the same store: the seconds until /readyz answers 200 and an
     intake is accepted, and the RSS then and once the loop has read every destination.
Prints one "key value" per line. Builds nothing: run ./dev build first.
Usage: bench/backlog_scale.py [BUILD_DIR] [TOTAL] [DESTINATIONS]
       (defaults: build, 1000000, 100000; INTAKE_ONLY=1: step 1 only, HOLD_S=N then
       keeps the service up N s; KILL_SETTLED=1: steps 1-2, then kill -9, so a heap profiler
       wrapping the service sees what is live when settled as leaked; KEEP_TMP=1 keeps the
       store and config)
"""

import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
import scale_support  # noqa: E402
TOKEN = "backlog-scale-admin-token-0123456789"
CLIENTS = 4
BATCH = 1000


def post_all(port, sim_port, total, destinations):
    """Posts `total` deliveries over `destinations`, CLIENTS batches at a time."""
    def post(b):
        items = [{"tenant": "acme", "platform": "webhook", "credential": "hooks",
                  "destination": "http://127.0.0.1:%d/hooks/d%d" % (sim_port, i % destinations),
                  "payload": {"n": i}} for i in range(b, min(total, b + BATCH))]
        body = {"deliveries": items}
        while True:
            status, _ = scale_support.call(port, "POST", "/v1/deliveries/batch", body, TOKEN)
            if status == 202:
                return
            time.sleep(0.2)
    with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
        list(pool.map(post, range(0, total, BATCH)))


def store_memory(port):
    """The store's parts of the RSS (relay_egress_store_memory_bytes), in MiB, as one line."""
    status, body = scale_support.call(port, "GET", "/metrics", None, TOKEN)
    if status != 200:
        return "unavailable (%d)" % status
    text = body.decode() if isinstance(body, bytes) else body
    parts = []
    for line in text.splitlines():
        if line.startswith("relay_egress_store_memory_bytes{"):
            part = line.split('"')[1]
            parts.append("%s %.0f" % (part, float(line.rsplit(" ", 1)[1]) / 2**20))
    return " ".join(parts)


def wait_ready(port, timeout_s=120):
    t = time.monotonic()
    while time.monotonic() - t < timeout_s:
        try:
            if scale_support.call(port, "GET", "/readyz")[0] == 200:
                return time.monotonic() - t
        except OSError:
            pass
        time.sleep(0.02)
    raise RuntimeError("not ready in %d s" % timeout_s)


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "build")
    total = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    destinations = int(sys.argv[3]) if len(sys.argv) > 3 else 100_000
    tmp = tempfile.mkdtemp(prefix="backlog-scale-")
    sim, sim_port = scale_support.start_throttling_sim(build)
    lines = ("tenant_backlog_watermark = %d\n"
             "[budgets.tenant_intake]\nlimit = 1000000\nscale_ms = 1000\nburst = 1000000\n"
             % (2 * total))
    service, port = scale_support.start_service(build, tmp, TOKEN, ("acme",), lines)
    try:
        t = time.monotonic()
        post_all(port, sim_port, total, destinations)
        seconds = time.monotonic() - t
        rss, hwm = scale_support.rss_mib(service.pid)
        print("deliveries %d destinations %d" % (total, destinations))
        print("intake_per_s %.0f (%.1f s, %d clients)" % (total / seconds, seconds, CLIENTS))
        print("rss_mib_after_intake %.0f peak %.0f" % (rss, hwm))
        print("store_mib_after_intake %s" % store_memory(port))
        if os.environ.get("INTAKE_ONLY"):
            sys.stdout.flush()
            time.sleep(float(os.environ.get("HOLD_S", "0")))
            return
        print("first_attempts_seconds %.1f" %
              scale_support.wait_deferred(port, TOKEN, destinations))
        time.sleep(2)
        rss, hwm = scale_support.rss_mib(service.pid)
        print("rss_mib_settled %.0f peak %.0f" % (rss, hwm))
        print("store_mib_settled %s" % store_memory(port))
        sys.stdout.flush()
        if os.environ.get("KILL_SETTLED"):
            # Every process serving this config, a wrapper's child included (service.pid may be
            # the wrapper's); the profiler then has a few seconds to write what it saw.
            subprocess.run(["pkill", "-KILL", "-f", "--",
                            "serve --config " + os.path.join(tmp, "relay-egress.toml")])
            time.sleep(5)
            return
        service.send_signal(signal.SIGKILL)
        service.wait()
        t = time.monotonic()
        service, port = scale_support.start_service(build, tmp, TOKEN, ("acme",), lines)
        print("restart_to_port_s %.2f" % (time.monotonic() - t))
        wait_ready(port)
        print("restart_to_ready_s %.2f" % (time.monotonic() - t))
        item = {"tenant": "acme", "platform": "webhook", "credential": "hooks",
                "destination": "http://127.0.0.1:%d/hooks/after" % sim_port, "payload": {}}
        while scale_support.call(port, "POST", "/v1/deliveries", item, TOKEN)[0] != 202:
            time.sleep(0.02)
        print("restart_to_intake_s %.2f" % (time.monotonic() - t))
        rss, _ = scale_support.rss_mib(service.pid)
        print("rss_mib_at_ready %.0f" % rss)
        time.sleep(10)
        rss, hwm = scale_support.rss_mib(service.pid)
        print("rss_mib_10s_after_restart %.0f peak %.0f" % (rss, hwm))
        print("store_mib_10s_after_restart %s" % store_memory(port))
        stats = json.loads(scale_support.call(port, "GET", "/v1/stats", None, TOKEN)[1])
        print("queued %s deferred %s" % (stats.get("queued"), stats.get("deferred")))
    finally:
        for child in (service, sim):
            child.terminate()
            child.wait()
        if not os.environ.get("KEEP_TMP"):
            os.system("rm -rf '%s'" % tmp)
        else:
            print("kept %s" % tmp)


if __name__ == "__main__":
    main()
