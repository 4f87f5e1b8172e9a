#!/usr/bin/python3
"""The operator console at scale (docs/console.md): 1,000 destinations and 100,000 deliveries.

Starts build/relay-egress-sim (every receiver answering 429 with a 10-hour Retry-After, so every
destination keeps its work) and build/relay-egress serve on free loopback ports, with a temp
config and store, posts 100,000 webhook deliveries for two tenants over 1,000 destinations
(batches of 500, paced under the tenants' intake budget), then drives the console in headless
Chromium (as the browser test does) and prints what it measured in the page: the destinations
page's first render and its sort times, loading the whole deliveries list by scrolling, the rows
in the DOM, a random jump's repaint, the JS heap and the browser's long tasks. Builds nothing:
run ./dev build first. Usage: bench/console_scale.py [BUILD_DIR]   (default: build)
"""

import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "service", "console"))
sys.dont_write_bytecode = True
from console_browser import Console, start_browser  # noqa: E402
sys.path.insert(0, HERE)
import scale_support  # noqa: E402

TOKEN = "console-scale-admin-token-0123456789"


def call(port, method, path, body=None):
    return scale_support.call(port, method, path, body, TOKEN)


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "build")
    tmp = tempfile.mkdtemp(prefix="console-scale-")
    sim, sim_port = scale_support.start_throttling_sim(build)
    service, port = scale_support.start_service(build, tmp, TOKEN, ("acme", "beta"))
    driver = None
    try:
        for b in range(200):
            tenant = ("acme", "beta")[b % 2]
            items = [{"tenant": tenant, "platform": "webhook", "credential": "hooks",
                      "destination": "http://127.0.0.1:%d/hooks/%s-d%d" % (sim_port, tenant, i),
                      "payload": {"n": b * 500 + i}} for i in range(500)]
            while call(port, "POST", "/v1/deliveries/batch", {"deliveries": items})[0] != 202:
                time.sleep(1)
            time.sleep(0.55)  # the tenant intake budget: 1,000 per second
        print("posted 100,000 deliveries to 1,000 destinations")

        class Args:
            base = "http://127.0.0.1:%d" % port
            shots = os.path.join(tmp, "shots")
        driver = start_browser(os.path.join(tmp, "chromium"))
        c = Console(driver, Args)
        c.wait._timeout = 600
        c.sign_in(TOKEN)
        driver.execute_script(
            "window.longTasks = []; new PerformanceObserver((l) => { for (const e of "
            "l.getEntries()) window.longTasks.push(e.duration); })"
            ".observe({type: 'longtask', buffered: true});")
        t = time.time()
        c.go("#/destinations")
        c.until("1,000 destinations", lambda: c.text("#dest-summary").startswith("1,000"))
        print("destinations: shown after %.2f s, %d rows in the DOM" % (
            time.time() - t,
            driver.execute_script("return document.querySelectorAll('#destinations tbody tr')"
                                  ".length")))
        for col in (3, 5, 7):
            ms = driver.execute_script(
                "const b = document.querySelector('#destinations thead th:nth-child(%d) button');"
                "const t = performance.now(); b.click(); return performance.now() - t;" % col)
            print("destinations: sort by column %d: %.0f ms" % (col, ms))
        c.go("#/deliveries")
        c.until("the first rows", lambda: c.find("#delivery-list .vrow[data-id]"))
        t = time.time()
        while not c.text("#delivery-count").startswith("100,000"):
            driver.execute_script(
                "const s = document.getElementById('delivery-list'); s.scrollTop = s.scrollHeight;")
            time.sleep(0.05)
        print("deliveries: 100,000 loaded by scrolling in %.1f s, %d rows in the DOM" % (
            time.time() - t,
            driver.execute_script("return document.querySelectorAll('#delivery-list .vrow')"
                                  ".length")))
        jumps = sorted(driver.execute_script(
            "const s = document.getElementById('delivery-list'); const t = performance.now();"
            "s.scrollTop = Math.random() * s.scrollHeight; s.dispatchEvent(new Event('scroll'));"
            "return new Promise((r) => requestAnimationFrame(() => r(performance.now() - t)));")
            for _ in range(50))
        print("deliveries: random jump to repaint: median %.0f ms, max %.0f ms" % (
            jumps[25], jumps[-1]))
        print("JS heap: %.0f MB" % (driver.execute_script(
            "return performance.memory.usedJSHeapSize") / 1e6))
        long_tasks = driver.execute_script("return window.longTasks")
        print("long tasks (over 50 ms): %d, longest %.0f ms" % (
            len(long_tasks), max(long_tasks or [0])))
    finally:
        if driver:
            driver.quit()
        for child in (service, sim):
            child.terminate()
            child.wait()
        subprocess.run(["rm", "-rf", tmp], check=False)


if __name__ == "__main__":
    main()
