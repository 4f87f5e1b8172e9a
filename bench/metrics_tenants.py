#!/usr/bin/python3
"""/metrics with 10,000 configured tenants, each with work (issue 35, docs/api.md "Destinations").

Starts build/relay-egress-sim (every receiver answering 429 with a 10-hour Retry-After) and
build/relay-egress serve with N tenants in its config, posts one webhook for each tenant, then
scrapes /metrics 13 times and prints each scrape's time and size, the series, and the service's
RSS before the first scrape, after them (2 s later: freed memory is given back within 1 s; the
last text may still be kept), once the last text's time is over (12 s after them: a text is kept
at most 10 s from its making, and its memory given back 1 s later) and at its peak; then
another tenant's end-to-end latency (as bench/destinations_scale.py measures it) at 200/s
idle, and while a second process scrapes /metrics back to back, with the service's CPU over
each and the scraping client's own; also the kept times the timed scrapes' texts show, and
zlib's time and size on the last text at level 1 (the service's) and 6 (zlib's default).
Builds nothing: run ./dev build first.
Usage: bench/metrics_tenants.py [BUILD_DIR] [N] [INTERVAL_S] [ENCODING]
         (defaults: build, 10000, 0, identity)
       INTERVAL_S: the scraping client scrapes once per that many seconds (0: as fast as the
       service lets it, waiting as each 429 says)
       ENCODING: gzip (every scrape sends Accept-Encoding: gzip and inflates what comes as gzip,
       as Prometheus does), gzip-uninflated (asks for gzip and does not inflate it: a scraper on
       another machine, whose inflating takes none of these two cores; the 13 timed scrapes
       still inflate, to count the series) or identity (none asks for gzip)
       (bench/metrics_tenants.py --scrape PORT SECONDS INTERVAL_S ENCODING is its scraping
       client)
"""

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
import proc_cpu  # noqa: E402
import scale_support  # noqa: E402

TOKEN = "metrics-tenants-admin-token-0123456789"


def gauge(text, name):
    """The value (as written) of relay_egress_metrics_text_<name>_seconds in `text`, or ""."""
    prefix = b"\nrelay_egress_metrics_text_" + name + b"_seconds "
    at = text.find(prefix)
    return "" if at < 0 else text[at + len(prefix):text.index(b"\n", at + 1)].decode()


def scrape(port, encoding, inflate=True):
    """(status, text, bytes on the wire) of one GET /metrics; asks for gzip unless `encoding` is
    identity, and inflates an answer that comes so when `inflate`, as Prometheus does."""
    headers = {"Authorization": "Bearer " + TOKEN}
    if encoding != "identity":
        headers["Accept-Encoding"] = "gzip"
    req = urllib.request.Request("http://127.0.0.1:%d/metrics" % port, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=120) as res:
            body = res.read()
            if res.headers.get("Content-Encoding") == "gzip" and inflate:
                return res.status, zlib.decompress(body, 31), len(body)
            return res.status, body, len(body)
    except urllib.error.HTTPError as e:
        body = e.read()
        return e.code, body, len(body)


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "build")
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
    interval = sys.argv[3] if len(sys.argv) > 3 else "0"
    encoding = sys.argv[4] if len(sys.argv) > 4 else "identity"
    assert encoding in ("gzip", "gzip-uninflated", "identity"), encoding
    tmp = tempfile.mkdtemp(prefix="metrics-tenants-")
    receiver, hook = scale_support.start_receiver()
    sim, sim_port = scale_support.start_throttling_sim(build)
    service, port = scale_support.start_service(
        build, tmp, TOKEN, ["t%d" % i for i in range(n)] + ["globex"])
    try:
        for b in range(0, n, 500):
            items = [{"tenant": "t%d" % i, "platform": "webhook", "credential": "hooks",
                      "destination": "http://127.0.0.1:%d/hooks/t%d" % (sim_port, i),
                      "payload": {"n": i}} for i in range(b, min(n, b + 500))]
            status, _ = scale_support.call(port, "POST", "/v1/deliveries/batch",
                                           {"deliveries": items}, TOKEN)
            assert status in (202, 207), status
        print("first_attempts_seconds %.1f" % scale_support.wait_deferred(port, TOKEN, n))
        before, _ = scale_support.rss_mib(service.pid)
        times = []
        kept_seen = {}  # made time -> the kept gauge that text shows (the text before it's)
        for _ in range(13):
            while True:
                t = time.monotonic()
                status, body, wire = scrape(port, encoding)
                if status != 429:
                    break
                # Over /metrics' 32 MiB a second: waits as told (the wait is not timed).
                time.sleep(json.loads(body)["retry_after_ms"] / 1000)
            times.append(time.monotonic() - t)
            assert status == 200, status
            kept_seen[gauge(body, b"made_timestamp")] = gauge(body, b"kept")
        time.sleep(2)
        after, peak = scale_support.rss_mib(service.pid)
        time.sleep(10)
        gone, _ = scale_support.rss_mib(service.pid)
        print("tenants %d" % n)
        print("metrics_bytes %d sent %d (%s) series %d" % (
            len(body), wire, encoding,
            sum(1 for line in body.split(b"\n") if line and not line.startswith(b"#"))))
        print("scrape_ms first %.0f median %.0f max %.0f" % (
            1000 * times[0], 1000 * sorted(times)[len(times) // 2], 1000 * max(times)))
        print("rss_mib_before %.0f after %.0f growth %.0f, text gone %.0f growth %.0f, "
              "peak %.0f" % (before, after, after - before, gone, gone - before, peak))
        print("texts %d, kept_s of the ones before them: %s" % (
            len(kept_seen), " ".join(k for k in kept_seen.values() if k)))
        for level in (1, 6):  # the service's level, and zlib's default (Python's binding)
            best, size = float("inf"), 0
            for _ in range(3):
                t = time.process_time()
                size = len(zlib.compress(body, level))
                best = min(best, time.process_time() - t)
            print("gzip_level %d ms %.1f bytes %d" % (level, 1000 * best, size))
        scale_support.probe(port, TOKEN, hook, 2, 200)  # warm the receiver's connection
        cpu = 1000 * proc_cpu.seconds(service.pid)
        idle, sent = scale_support.probe(port, TOKEN, hook, 10, 200)
        idle_cpu = 1000 * proc_cpu.seconds(service.pid) - cpu
        cpu += idle_cpu
        print("probe_idle_sent %d p50_ms %.2f p99_ms %.2f service_cpu_ms %.0f" % (
            sent, scale_support.quantile(idle, 0.5), scale_support.quantile(idle, 0.99), idle_cpu))
        scraper = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--scrape",
                                    str(port), "10", interval, encoding], stdout=subprocess.PIPE,
                                   text=True)
        busy, sent = scale_support.probe(port, TOKEN, hook, 10, 200)
        scraped = scraper.communicate(timeout=120)[0].strip()
        busy_cpu = 1000 * proc_cpu.seconds(service.pid) - cpu
        print("probe_scraping_sent %d p50_ms %.2f p99_ms %.2f service_cpu_ms %.0f (%s)" % (
            sent, scale_support.quantile(busy, 0.5), scale_support.quantile(busy, 0.99),
            busy_cpu, scraped))
    finally:
        for child in (service, sim):
            child.terminate()
            child.wait()
        receiver.shutdown()
        subprocess.run(["rm", "-rf", tmp], check=False)


def scrape_main(port, seconds, interval, encoding):
    """The scraping client: /metrics for `seconds`, once per `interval` s (0: back to back)."""
    t, scrapes, refused = time.monotonic(), 0, 0
    while time.monotonic() - t < seconds:
        if interval > 0:
            time.sleep(max(0.0, t + (scrapes + refused) * interval - time.monotonic()))
        status, body, _ = scrape(port, encoding, inflate=encoding != "gzip-uninflated")
        scrapes += status == 200
        if status == 429:
            refused += 1
            time.sleep(json.loads(body)["retry_after_ms"] / 1000)  # as told
    used = resource.getrusage(resource.RUSAGE_SELF)
    print("scrapes %d refused %d in %.1f s, client_cpu_ms %.0f" % (
        scrapes, refused, time.monotonic() - t, 1000 * (used.ru_utime + used.ru_stime)))


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--scrape":
        scrape_main(int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5])
    else:
        main()
