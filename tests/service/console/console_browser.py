#!/usr/bin/python3
"""Drives the operator console in headless Chromium (console_browser_itest.cc starts the
service and the simulator, then runs this with Debian's python3 and python3-selenium).

Checks the done-when list of the console (docs/console.md) and saves a screenshot of each page
into --shots. Exits 0 when every check passed, 1 with the failed check on stderr otherwise.
Never downloads anything: the browser is /usr/bin/chromium, the driver /usr/bin/chromedriver.
"""

import argparse
import json
import os
import sys
import threading
import time
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

WAIT_S = 60  # liveness only: every wait ends as soon as its condition holds


def parse_args():
    p = argparse.ArgumentParser()
    for name in ("base", "admin-token", "tenant-key", "tenant-id", "dead-id", "throttled",
                 "shots", "profile"):
        p.add_argument("--" + name, required=True)
    p.add_argument("--dead-count", type=int, required=True)
    # A receiver URL that accepts: deliveries are posted to it while the overview samples, so
    # its chart and rates show traffic.
    p.add_argument("--traffic-to", required=True)
    return p.parse_args()


def start_browser(profile):
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                 "--hide-scrollbars", "--force-device-scale-factor=1",
                 "--window-size=1360,900", "--user-data-dir=" + profile):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"),
                            options=opts)


class Console:
    def __init__(self, driver, args):
        self.d = driver
        self.args = args
        self.wait = WebDriverWait(driver, WAIT_S, poll_frequency=0.1)

    def until(self, what, condition):
        try:
            return self.wait.until(lambda d: condition())
        except TimeoutException:
            raise AssertionError("timed out waiting for: " + what)

    def find(self, css):
        found = self.d.find_elements(By.CSS_SELECTOR, css)
        return found[0] if found else None

    def text(self, css):
        """The rendered text of the first match ("" when none), read in one step: the pages
        redraw while they are looked at, so an element found earlier may be gone."""
        return self.d.execute_script(
            "const e = document.querySelector(arguments[0]); return e ? e.innerText : ''", css)

    def texts(self, css):
        return self.d.execute_script(
            "return [...document.querySelectorAll(arguments[0])].map((e) => e.innerText)", css)

    def shot(self, name):
        os.makedirs(self.args.shots, exist_ok=True)
        # Without a toast of the page before: the picture shows this page only.
        self.d.execute_script("document.getElementById('toast').className = 'toast'")
        time.sleep(0.3)  # let the last paint and the toast's fade settle
        path = os.path.join(self.args.shots, name + ".png")
        self.d.save_screenshot(path)
        print("screenshot", path)

    def sign_in(self, token):
        self.d.get(self.args.base + "/ui/")
        box = self.until("the sign-in form", lambda: self.find("#token"))
        box.send_keys(token)
        box.send_keys(Keys.ENTER)
        self.until("the navigation", lambda: self.find("#nav:not([hidden])"))

    def sign_out(self):
        self.find("#signout").click()
        self.until("the sign-in form", lambda: self.find("#token"))

    def go(self, hash_route):
        self.d.execute_script("location.hash = arguments[0]", hash_route)


def post_traffic(args, stop):
    """Posts a delivery for tenant acme every 50 ms until `stop` is set."""
    body = json.dumps({"tenant": "acme", "platform": "webhook", "destination": args.traffic_to,
                       "credential": "hooks", "payload": {"event": "traffic"}}).encode()
    while not stop.is_set():
        req = urllib.request.Request(args.base + "/v1/deliveries", data=body, method="POST",
                                     headers={"Authorization": "Bearer " + args.admin_token,
                                              "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as res:
            res.read()
        stop.wait(0.05)


def overview(c):
    stop = threading.Event()
    traffic = threading.Thread(target=post_traffic, args=(c.args, stop), daemon=True)
    traffic.start()
    try:
        c.go("#/overview")
        c.until("the overview's cards",
                lambda: len(c.d.find_elements(By.CSS_SELECTOR, ".stat")) >= 8)
        c.until("429s by platform", lambda: "webhook" in c.text("main .grid-2"))
        # A few samples (5 s apart) draw the chart; the rates show the traffic.
        c.until("a delivered rate", lambda: c.text(".stat.ok .stat-value") not in ("", "0.00/s", "–/s"))
        time.sleep(10)
        c.shot("overview")
    finally:
        stop.set()
        traffic.join()


def destinations(c):
    c.find('#nav a[data-page="destinations"]').click()

    def throttled_row():
        for row in c.texts("#destinations tbody tr"):
            cells = row.split("\t")
            if any(c.args.throttled in x for x in cells) and "retry_after" in cells:
                return cells
        return None
    cells = c.until("the throttled destination with its reason", throttled_row)
    # Its countdown to the next eligible time: the hour of the Retry-After.
    assert any(x.strip().endswith(" s") and " min " in x for x in cells), cells
    # Sorting by a header is a button: keyboard reachable.
    c.find("#destinations thead th:nth-child(1) button").send_keys(Keys.ENTER)
    c.until("sorted by platform", lambda: c.find('#destinations thead th[aria-sort="ascending"]'))
    c.shot("destinations")


def deliveries(c):
    c.go("#/deliveries?state=dead")
    dead = "#row-" + c.args.dead_id
    c.until("the dead delivery in the list", lambda: c.find(dead))
    # Keyboard: focus the list, move to the first row, open it with Enter.
    c.find("#delivery-list").send_keys(Keys.HOME)
    c.find("#delivery-list").send_keys(Keys.ENTER)
    c.until("the drawer", lambda: c.find("#drawer:not([hidden]) #drawer-replay"))
    c.find("#drawer-close").click()
    c.find(dead).click()
    c.until("the dead delivery's drawer",
            lambda: c.args.dead_id in c.text("#drawer-title") and c.find("#attempts"))
    assert "dead" in c.text("#drawer-state"), c.text("#drawer-state")
    assert "400" in c.text("#attempts"), c.text("#attempts")
    c.find("#drawer-replay").click()
    c.until("the replayed delivery shown delivered",
            lambda: c.text("#drawer-state").strip() == "delivered")
    c.shot("deliveries")
    c.find("#drawer-close").click()
    c.until("the drawer closed", lambda: c.find("#drawer[hidden]"))
    # Bulk replay of the filter: the dry-run count first, then the job's progress.
    c.find("#f-state").send_keys("dead")
    c.find("#delivery-filters button[type=submit]").click()
    c.find("#bulk-replay").click()
    c.until("the dry-run count", lambda: c.find("#dry-count"))
    expected = str(c.args.dead_count - 1)
    assert c.text("#dry-count") == expected, (c.text("#dry-count"), expected)
    c.find("#bulk-confirm").click()
    c.until("the job done", lambda: c.text("#job-text").startswith("done"))
    assert c.text("#job-text").startswith("done: %s replayed" % expected), c.text("#job-text")
    c.shot("bulk-replay")


def budgets(c):
    c.find('#nav a[data-page="budgets"]').click()
    c.until("the utilization table", lambda: c.find("#utilization"))
    c.until("the budget editor", lambda: c.find("#budget-table"))
    if not c.find("#ov-webhook_destination").is_selected():
        c.find("#ov-webhook_destination").click()
    # A value the console refuses itself: shown inline, nothing sent.
    burst = c.find("#burst-webhook_destination")
    burst.clear()
    burst.send_keys("0")
    c.find("#save-overrides").click()
    c.until("the console's own check inline",
            lambda: "burst" in c.text("#err-webhook_destination"))
    # One the browser accepts and the service refuses (over its maximum): its message inline.
    burst.clear()
    burst.send_keys("10")
    limit = c.find("#limit-webhook_destination")
    limit.clear()
    limit.send_keys("5000000000")
    c.find("#save-overrides").click()
    c.until("the service's refusal inline",
            lambda: "rate_limits.webhook_destination" in c.text("#err-webhook_destination"))
    c.d.set_window_size(1360, 1240)  # the whole editor in one picture
    c.d.execute_script("window.scrollTo(0, 0)")
    c.shot("budgets")
    c.d.set_window_size(1360, 900)


def pauses(c):
    """Pauses tenant acme (the tenant post_traffic posts for) from the Pauses view: the
    service's refusal of a pause without a scope shown, the pause listed, acme's throttled
    destination (an hour's Retry-After: it has work all along) shown paused with a link to its
    pause, then resumed from the list and the list empty again."""
    c.find('#nav a[data-page="pauses"]').click()
    c.until("the pause form", lambda: c.find("#pause-form"))
    c.until("the list of pauses loaded", lambda: c.find("#pauses tbody tr"))
    assert "No pause in force" in c.text("#pauses tbody"), c.text("#pauses tbody")
    # A reason alone pauses nothing: the service's 400 and its message are shown.
    c.find("#pause-reason").send_keys("no scope")
    c.find("#pause-submit").click()

    def refusal():
        shown = [t for t in c.texts("#pause-form .field-error, #pause-error") if t.strip()]
        return shown or None
    c.until("the service's refusal shown", refusal)
    assert c.text("#pauses tbody").startswith("No pause"), c.text("#pauses tbody")
    # Tenant acme with a reason: listed, with its reason.
    reason = "held by the console test"
    c.find("#pause-reason").clear()
    c.find("#pause-tenant").send_keys("acme")
    c.find("#pause-reason").send_keys(reason)
    c.find("#pause-submit").click()
    c.until("the pause listed",
            lambda: "acme" in c.text("#pauses tbody") and reason in c.text("#pauses tbody"))
    assert not refusal(), refusal()
    assert c.text("#pause-summary") == "1 in force", c.text("#pause-summary")
    pause_id = c.d.execute_script(
        "const r = document.querySelector('#pauses tbody tr[data-id]'); return r ? r.dataset.id : ''")
    assert pause_id.startswith("pause_"), pause_id
    # The destinations page shows the throttled destination paused, linked to the pause.
    c.find('#nav a[data-page="destinations"]').click()

    def paused_link():
        return c.d.execute_script(
            "for (const r of document.querySelectorAll('#destinations tbody tr')) {"
            "  const a = r.querySelector('a.tag.paused');"
            "  if (a && r.innerText.includes(arguments[0])) { return a.getAttribute('href'); }"
            "} return null", c.args.throttled)
    href = c.until("the throttled destination shown paused", paused_link)
    assert href == "#/pauses?id=" + pause_id, (href, pause_id)
    c.shot("destinations-paused")
    # The link leads to the pause, marked in the list; Resume empties the list.
    c.find("#destinations a.tag.paused").click()
    c.until("the pause marked", lambda: c.find("#pauses tr.row-target#row-" + pause_id))
    c.shot("pauses")
    c.find("#resume-" + pause_id).click()
    c.until("the list empty", lambda: c.text("#pauses tbody").startswith("No pause in force"))
    # Resumed: the destination is no longer shown paused.
    c.find('#nav a[data-page="destinations"]').click()

    def unpaused():
        rows = [r for r in c.texts("#destinations tbody tr") if c.args.throttled in r]
        return rows and not c.find("#destinations .tag.paused")
    c.until("the throttled destination no longer paused", unpaused)


def tenant_view(c):
    c.sign_out()
    c.sign_in(c.args.tenant_key)
    assert c.text("#who").startswith("tenant: "), c.text("#who")
    c.go("#/deliveries")
    mine = "#row-" + c.args.tenant_id
    c.until("the tenant's own delivery", lambda: c.find(mine))
    c.until("the whole list loaded", lambda: "+" not in c.text("#delivery-count"))
    tenants = c.d.execute_script(
        "return [...document.querySelectorAll('#delivery-list .vrow')]"
        ".map((r) => r.querySelectorAll('[role=gridcell]')[2].textContent)")
    assert tenants and set(tenants) == {"beta"}, tenants
    assert c.find("#row-" + c.args.dead_id) is None, "another tenant's delivery is shown"
    c.shot("tenant-deliveries")
    c.find('#nav a[data-page="destinations"]').click()
    c.until("the destinations table", lambda: c.find("#destinations tbody tr"))
    time.sleep(0.5)
    body = c.text("#destinations tbody")
    assert c.args.throttled not in body, "another tenant's destination is shown"
    assert "beta-receiver" in body or "No destination" in body, body
    # Pauses are the admin's: the page says so and lists nothing.
    c.find('#nav a[data-page="pauses"]').click()
    c.until("pauses said to need the admin token", lambda: "admin token" in c.text("main"))
    assert c.find("#pauses") is None and c.find("#pause-form") is None


def narrow(c):
    c.d.set_window_size(420, 900)
    c.go("#/overview")
    c.until("the overview's cards", lambda: c.find(".stat"))
    c.shot("narrow")
    width = c.d.execute_script("return document.documentElement.scrollWidth")
    assert width <= 420, "the page scrolls sideways at 420 px: %s" % width


def csp_violations(driver):
    bad = []
    for entry in driver.get_log("browser"):
        if "Content Security Policy" in entry.get("message", ""):
            bad.append(entry["message"])
    return bad


def main():
    args = parse_args()
    driver = start_browser(args.profile)
    try:
        c = Console(driver, args)
        c.sign_in(args.admin_token)
        assert c.text("#who") == "admin: every tenant", c.text("#who")
        overview(c)
        destinations(c)
        deliveries(c)
        budgets(c)
        pauses(c)
        tenant_view(c)
        narrow(c)
        violations = csp_violations(driver)
        assert not violations, violations
    except Exception as e:  # any failure: report it, keep a screenshot, exit 1
        print("FAILED:", type(e).__name__, e, file=sys.stderr)
        try:
            c.shot("failure")
        except Exception:  # the screenshot is a help, not the result
            pass
        return 1
    finally:
        driver.quit()
    print("console checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
