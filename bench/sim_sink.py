"""The platform simulator (build/relay-egress-sim) as a webhook sink for a benchmark: its
receivers /hooks/<name> accept everything (no limit configured) and count, per receiver, the
accepted requests, duplicates (a repeated webhook-id, or a payload "msg_id" accepted before) and
order violations (a payload "seq" below the last accepted one of its receiver and payload
"ordering_key"); docs/simulator.md, tests/simulator/hook_sim.cc."""

import json
import os
import subprocess
import time
import urllib.request


class SimSink:
    def __init__(self, build, log_path, threads=1):
        self.log_path = log_path
        with open(log_path, "ab") as err:
            self.process = subprocess.Popen(
                ["/usr/bin/setpriv", "--pdeathsig=KILL", os.path.join(build, "relay-egress-sim"),
                 "--port", "0", "--threads", str(threads)],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                start_new_session=True)
        line = self.process.stdout.readline().decode()
        if not line.startswith("listening "):
            raise RuntimeError("relay-egress-sim did not start (see %s)" % log_path)
        self.port = int(line.rsplit(":", 1)[1])
        self.base = "http://127.0.0.1:%d" % self.port

    def hook(self, name):
        return "%s/hooks/%s" % (self.base, name)

    def _call(self, method, path):
        req = urllib.request.Request(self.base + path, method=method,
                                     data=b"{}" if method == "POST" else None)
        with urllib.request.urlopen(req, timeout=10) as res:
            return json.loads(res.read())

    def stats(self):
        return self._call("GET", "/_sim/stats")

    def reset(self):
        """Forgets every count and every accepted identity."""
        self._call("POST", "/_sim/reset")

    def accepted(self):
        return self.stats()["totals"]["accepted"]

    def wait_accepted(self, count, stall_timeout, poll=0.02, tick=None):
        """Polls until the receivers accepted `count` requests in all: the monotonic time of the
        poll that saw it, or None after `stall_timeout` s without a new one. `tick()` is called
        between polls."""
        seen, changed = -1, time.monotonic()
        while True:
            accepted = self.accepted()
            now = time.monotonic()
            if accepted >= count:
                return now
            if accepted != seen:
                seen, changed = accepted, now
            if now - changed > stall_timeout:
                return None
            if tick is not None:
                tick()
            time.sleep(poll)

    def verdict(self, acknowledged):
        """What the counts say of `acknowledged` deliveries, each sent once to a receiver with a
        payload msg_id of its own. With no limit, fault or signature configured, a request the
        receiver did not count as accepted is a repeated webhook-id (the same delivery sent
        again); the other duplicates are a msg_id accepted under another webhook-id (stored
        twice), and those were counted as accepted too."""
        stats = self.stats()
        t = stats["totals"]
        same = t["requests"] - t["accepted"] - t["rate_limited"] - t["errors"]
        other = t["duplicates"] - same
        distinct = t["accepted"] - other
        return {
            "acknowledged": acknowledged, "arrived": distinct,
            "missing": max(0, acknowledged - distinct),
            "duplicates": t["duplicates"], "duplicates_same_delivery": same,
            "duplicates_other_delivery": other,
            "order_violations": t["order_violations"],
            "urls_with_order_violations": sum(
                1 for c in stats["destinations"].values() if c["order_violations"]),
            "sink_requests": t["requests"], "sink_errors": t["errors"],
            "sink_429s": t["rate_limited"],
        }

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
