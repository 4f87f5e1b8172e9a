#!/usr/bin/python3
"""GET /v1/destinations at 100,000 destinations with work (issue 35, docs/api.md "Destinations").

Starts build/relay-egress-sim (every receiver answering 429 with a 10-hour Retry-After, so every
destination keeps its work) and build/relay-egress serve on free loopback ports, with a temp
config and store, and posts one webhook delivery to each of N destinations (tenant acme). Then:
  1. walks every page of 1,000 and of 100 (time per page: median, p99, max; each destination
     must come exactly once);
  2. measures another tenant's end-to-end latency (POST to arrival at a receiver of this script's
     own on loopback, which records when each request arrives) at 200/s, idle, and while a client
     walks all pages of 1,000 ten times over; and the service's RSS before and after.
Prints one "key value" per line. Builds nothing: run ./dev build first.
Usage: bench/destinations_scale.py [BUILD_DIR] [N]   (defaults: build, 100000)
       (bench/destinations_scale.py --walk PORT LIMIT TIMES is its walking client)
"""

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
import scale_support  # noqa: E402
TOKEN = "destinations-scale-admin-token-0123456789"


def call(port, method, path, body=None):
    return scale_support.call(port, method, path, body, TOKEN)


def walk(port, limit):
    """One walk of every page: (seconds per page, keys seen)."""
    times, keys, cursor = [], [], ""
    while True:
        t = time.monotonic()
        status, body = call(port, "GET", "/v1/destinations?limit=%d%s" % (
            limit, "&cursor=" + urllib.parse.quote(cursor) if cursor else ""))
        times.append(time.monotonic() - t)
        if status == 429:
            time.sleep(0.05)
            continue
        page = json.loads(body)
        keys.extend(d["key"] for d in page["destinations"])
        cursor = page["next_cursor"] or ""
        if not cursor:
            return times, keys


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "build")
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    tmp = tempfile.mkdtemp(prefix="destinations-scale-")
    receiver, hook = scale_support.start_receiver()
    sim, sim_port = scale_support.start_throttling_sim(build)
    service, port = scale_support.start_service(
        build, tmp, TOKEN, ("acme", "globex"),
        "tenant_backlog_watermark = %d\n"
        "[budgets.tenant_intake]\nlimit = 100000\nscale_ms = 1000\nburst = 100000\n" % (2 * n))
    try:
        t = time.monotonic()
        for b in range(0, n, 500):
            items = [{"tenant": "acme", "platform": "webhook", "credential": "hooks",
                      "destination": "http://127.0.0.1:%d/hooks/d%d" % (sim_port, i),
                      "payload": {"n": i}} for i in range(b, min(n, b + 500))]
            while call(port, "POST", "/v1/deliveries/batch", {"deliveries": items})[0] != 202:
                time.sleep(0.2)
        while json.loads(call(port, "GET", "/v1/stats")[1]).get("destinations", 0) < n:
            time.sleep(0.5)
        print("destinations %d" % n)
        print("intake_seconds %.1f" % (time.monotonic() - t))
        print("first_attempts_seconds %.1f" % scale_support.wait_deferred(port, TOKEN, n))
        for limit in (1000, 100):
            times, keys = walk(port, limit)
            print("page_%d_ms_median %.1f" % (limit, 1000 * scale_support.quantile(times, 0.5)))
            print("page_%d_ms_p99 %.1f" % (limit, 1000 * scale_support.quantile(times, 0.99)))
            print("page_%d_ms_max %.1f" % (limit, 1000 * max(times)))
            print("page_%d_listed %d distinct %d" % (limit, len(keys), len(set(keys))))
        scale_support.probe(port, TOKEN, hook, 2, 200)  # warm the receiver's connection
        idle, sent = scale_support.probe(port, TOKEN, hook, 10, 200)
        print("probe_idle_sent %d arrived %d" % (sent, len(idle)))
        print("probe_idle_p50_ms %.2f" % scale_support.quantile(idle, 0.5))
        print("probe_idle_p99_ms %.2f" % scale_support.quantile(idle, 0.99))
        rss_before, _ = scale_support.rss_mib(service.pid)
        # The walking client is a process of its own (this script's --walk), so that its JSON
        # parsing does not hold this one's interpreter while the probe's times are taken.
        walker = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--walk",
                                   str(port), "1000", "10"], stdout=subprocess.PIPE, text=True)
        busy, sent = scale_support.probe(port, TOKEN, hook, 10, 200)
        walked = walker.communicate(timeout=600)[0].strip()
        rss_after, hwm = scale_support.rss_mib(service.pid)
        print("probe_walking_sent %d arrived %d" % (sent, len(busy)))
        print("probe_walking_p50_ms %.2f" % scale_support.quantile(busy, 0.5))
        print("probe_walking_p99_ms %.2f" % scale_support.quantile(busy, 0.99))
        print(walked)
        print("rss_mib_before_walks %.0f after %.0f growth %.0f peak %.0f" % (
            rss_before, rss_after, rss_after - rss_before, hwm))
    finally:
        for child in (service, sim):
            child.terminate()
            child.wait()
        receiver.shutdown()
        subprocess.run(["rm", "-rf", tmp], check=False)


def walk_main(port, limit, times):
    t, pages = time.monotonic(), 0
    for _ in range(times):
        pages += len(walk(port, limit)[0])
    print("walks %d pages %d seconds %.1f" % (times, pages, time.monotonic() - t))


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--walk":
        walk_main(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
    else:
        main()
