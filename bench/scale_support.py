"""What the scale scripts (console_scale.py, destinations_scale.py) share: starting a program that
prints its port, and calling the service's API on loopback."""

import json
import subprocess
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


def start(args):
    """Starts a program that prints "...:<port>" as its first line: (child, port)."""
    child = subprocess.Popen(args, stdout=subprocess.PIPE)
    return child, int(child.stdout.readline().decode().rsplit(":", 1)[1])
