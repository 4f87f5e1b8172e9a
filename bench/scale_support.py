"""What the scale scripts (console_scale.py, destinations_scale.py, metrics_tenants.py) share:
starting a program that prints its port, calling the service's API on loopback, the service's
RSS, and another tenant's end-to-end latency (a receiver of the script's own on loopback)."""

import concurrent.futures
import http.server
import json
import os
import subprocess
import threading
import time
import urllib.error
import urllib.request


def call(port, method, path, body=None, token=""):
    """(status, body bytes) of one API call to 127.0.0.1:port, with `token` as the bearer."""
    req = urllib.request.Request(
        "http://127.0.0.1:%d%s" % (port, path), method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as res:
            return res.status, res.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def wait_deferred(port, token, n, timeout_s=600):
    """Waits until the service holds at least `n` deliveries deferred (each first attempt answered
    429 by the throttling simulator): until then the first attempts are still going out (100,000
    of them take about a minute under the tenant's egress budget) and their writes grow the
    service's memory and take its CPU. Returns the seconds waited."""
    t = time.monotonic()
    while json.loads(call(port, "GET", "/v1/stats", None, token)[1]).get("deferred", 0) < n:
        if time.monotonic() - t > timeout_s:
            raise RuntimeError("fewer than %d deliveries deferred after %d s" % (n, timeout_s))
        time.sleep(0.5)
    return time.monotonic() - t


def start(args):
    """Starts a program that prints "...:<port>" as its first line: (child, port)."""
    child = subprocess.Popen(args, stdout=subprocess.PIPE)
    return child, int(child.stdout.readline().decode().rsplit(":", 1)[1])


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def quantile(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


class Receiver(http.server.BaseHTTPRequestHandler):
    """Records when each webhook arrives: the payload carries when it was posted. Keeps its
    connections (HTTP/1.1): with one connection per webhook and the default listen backlog of 5,
    a SYN dropped while the busy process was slow to accept cost a 1 s retransmit, the probe's
    p99 then."""
    arrivals = {}
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        now = time.monotonic()
        try:
            payload = json.loads(body)
            Receiver.arrivals[payload["n"]] = now - payload["t"]
        except (ValueError, KeyError, TypeError):
            pass
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def probe(port, token, hook, seconds, rate):
    """Posts one webhook of tenant globex (credential "hooks") every 1/rate s for `seconds`, to a
    Receiver at `hook`; their end-to-end latencies (ms) and how many were accepted. Open loop:
    each post goes at its time from one of 8 threads, whatever the ones before are waiting for,
    so a slow answer delays no later post (a synchronous client offered ~145/s, not 200/s, while
    the service was busy: bench/README.md, section 11)."""
    Receiver.arrivals.clear()
    sent = []
    lock = threading.Lock()

    def post(n):
        # Over 8 destinations: 25/s each, under webhook_destination's default of 50/s.
        item = {"tenant": "globex", "platform": "webhook", "credential": "hooks",
                "destination": "%s/%d" % (hook, n % 8),
                "payload": {"n": n, "t": time.monotonic()}}
        if call(port, "POST", "/v1/deliveries", item, token)[0] == 202:
            with lock:
                sent.append(n)

    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        n, start = 0, time.monotonic()
        while n < seconds * rate:
            time.sleep(max(0.0, start + n / rate - time.monotonic()))
            pool.submit(post, n)
            n += 1
    deadline = time.monotonic() + 10
    while len(Receiver.arrivals) < len(sent) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [Receiver.arrivals[i] * 1000 for i in sent if i in Receiver.arrivals], len(sent)


SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
HERE = os.path.dirname(os.path.abspath(__file__))


class ReceiverServer(http.server.ThreadingHTTPServer):
    request_queue_size = 256  # the listen backlog (socketserver's default: 5)
    daemon_threads = True


def start_receiver():
    """A Receiver on a free loopback port: (server, its base URL)."""
    server = ReceiverServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, "http://127.0.0.1:%d/probe" % server.server_address[1]


def start_throttling_sim(build):
    """build/relay-egress-sim with every receiver answering 429 with a 10-hour Retry-After, so a
    destination keeps its work: (child, port)."""
    sim, port = start([os.path.join(build, "relay-egress-sim"), "--port", "0"])
    call(port, "POST", "/_sim/config",
         {"hook_defaults": {"faults": {"status": 429, "retry_after_s": 36000}}})
    return sim, port


def start_service(build, tmp, token, tenants, server_lines=""):
    """build/relay-egress serve with a config under `tmp`: the admin `token`, `server_lines` more
    in [server] (then any other sections), webhooks to loopback allowed, and a webhook credential
    "hooks" for each of `tenants`: (child, port)."""
    config = os.path.join(tmp, "relay-egress.toml")
    with open(config, "w") as f:
        f.write('[server]\nlisten = "127.0.0.1:0"\ndata_dir = "%s/store"\nadmin_token = "%s"\n'
                % (tmp, token))
        f.write(server_lines)
        f.write("[platforms.webhook]\nallow_private_networks = true\n")
        for tenant in tenants:
            f.write('[tenants.%s.credentials.hooks]\nplatform = "webhook"\nsecret = "%s"\n'
                    % (tenant, SECRET))
    return start([os.path.join(build, "relay-egress"), "serve", "--config", config,
                  "--profiles-dir", os.path.join(HERE, "..", "config", "profiles")])

