#!/usr/bin/python3
"""The report page in a real browser (Debian's chromium and chromedriver, python3-selenium).

Usage: browser_test.py REPORT.html REPORT.json [SCREENSHOT.png]

Checks, each a failure with its reason:
  - the page loads with no console message at warning level or above;
  - the browser requests nothing but the page itself (Chrome's performance log: every
    Network.requestWillBeSent), and no resource entry exists (performance.getEntriesByType);
  - every workload, pod row and number of the JSON is on the page: the plan, /dev/shm now, the
    learned peak and the memory limit of each row (the data-bytes the page carries and the text
    it shows);
  - choosing a namespace hides every other namespace's section, and "all" shows them again;
  - sorting by plan orders each namespace's workloads by their largest plan.
With SCREENSHOT, the page (1280 wide) is saved there.
"""
import json
import pathlib
import re
import sys

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select


def human(n):
    """HumanBytes of src/core/values/human_units.cc."""
    mi = 1 << 20
    if n < mi:
        return str(n)
    if n % mi == 0:
        for unit, shift in (("Ei", 60), ("Pi", 50), ("Ti", 40), ("Gi", 30), ("Mi", 20)):
            if n % (1 << shift) == 0:
                return f"{n >> shift}{unit}"
    return f"{n / mi:.1f}Mi"


def shows(text, value):
    """Whether `value` is a whole word of `text`: "4Gi" is not in "14Gi"."""
    return re.search(r"(?<![\w.])" + re.escape(value) + r"(?![\w.])", text) is not None


def main():
    html, data_file = pathlib.Path(sys.argv[1]).resolve(), sys.argv[2]
    shot = sys.argv[3] if len(sys.argv) > 3 else None
    report = json.load(open(data_file))
    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,1600",
                "--disable-dev-shm-usage", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-default-apps"):
        options.add_argument(arg)
    options.binary_location = "/usr/bin/chromium"
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    failures = []
    try:
        url = html.as_uri()
        driver.get(url)
        logs = [e for e in driver.get_log("browser") if e["level"] in ("WARNING", "SEVERE")]
        if logs:
            failures.append(f"console messages: {logs}")
        requested = []
        for entry in driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message["method"] == "Network.requestWillBeSent":
                requested.append(message["params"]["request"]["url"])
        others = [u for u in requested if u != url]
        if others or not requested:
            failures.append(f"requests besides the page: {others} (all: {requested})")
        resources = driver.execute_script("return performance.getEntriesByType('resource').length")
        if resources:
            failures.append(f"{resources} resources loaded")

        sections = driver.find_elements(By.CSS_SELECTOR, "section.ns")
        names = [s.get_attribute("data-namespace") for s in sections]
        want_names = [ns["name"] for ns in report["namespaces"]]
        if names != want_names:
            failures.append(f"namespaces {names}, JSON {want_names}")
        checked = 0
        for ns, section in zip(report["namespaces"], sections):
            articles = section.find_elements(By.CSS_SELECTOR, "article.workload")
            if len(articles) != len(ns["workloads"]):
                failures.append(f"{ns['name']}: {len(articles)} workloads on the page, {len(ns['workloads'])} in JSON")
                continue
            for w, article in zip(ns["workloads"], articles):
                if article.get_attribute("data-name") != w["workload"]:
                    failures.append(f"{ns['name']}: {article.get_attribute('data-name')} where JSON has {w['workload']}")
                rows = article.find_elements(By.CSS_SELECTOR, "tr.pod")
                if len(rows) != len(w["pods"]):
                    failures.append(f"{w['workload']}: {len(rows)} rows, JSON {len(w['pods'])}")
                    continue
                for p, row in zip(w["pods"], rows):
                    learned = p["learned"]["peakBytes"] if p["learned"] else None
                    for cls, want in (("required", p["requiredBytes"] or None), ("current", p["currentBytes"]),
                                      ("peak", learned), ("limit", p["memoryLimitBytes"])):
                        cell = row.find_element(By.CSS_SELECTOR, "td." + cls)
                        got = cell.get_attribute("data-bytes")
                        if (int(got) if got else None) != want:
                            failures.append(f"{w['workload']} {p['label']} {cls}: page {got}, JSON {want}")
                        if want is not None and cls != "current" and not shows(cell.text, human(want)):
                            failures.append(f"{w['workload']} {p['label']} {cls}: shows {cell.text!r}, not {human(want)}")
                        checked += 1
                    if not shows(row.find_element(By.CSS_SELECTOR, "td.current").text, p["current"]):
                        failures.append(f"{w['workload']} {p['label']}: /dev/shm now is not {p['current']!r}")
        if checked == 0:
            failures.append("no number was checked: the JSON lists no pod")

        select = Select(driver.find_element(By.ID, "namespace"))
        target = want_names[-1]
        select.select_by_value(target)
        shown = [s.get_attribute("data-namespace") for s in sections if s.is_displayed()]
        if shown != [target]:
            failures.append(f"filtered to {target}: shown {shown}")
        select.select_by_value("")
        if sum(s.is_displayed() for s in sections) != len(sections):
            failures.append("'all' does not show every namespace again")

        # The sort must be able to show itself: some namespace whose workloads' name order is not
        # their plan order, so that sorting by plan moves them.
        def order():
            return {s.get_attribute("data-namespace"): [(a.get_attribute("data-name"), int(a.get_attribute("data-required")))
                                                        for a in s.find_elements(By.CSS_SELECTOR, "article.workload")]
                    for s in driver.find_elements(By.CSS_SELECTOR, "section.ns")}
        by_name = order()
        moved = [ns for ns, ws in by_name.items() if [p for _, p in ws] != sorted((p for _, p in ws), reverse=True)]
        if not moved:
            failures.append("no namespace's name order differs from its plan order: the example cannot show the sort")
        Select(driver.find_element(By.ID, "sort")).select_by_value("required")
        for ns, ws in order().items():
            plans = [p for _, p in ws]
            if plans != sorted(plans, reverse=True) or sorted(ws) != sorted(by_name[ns]):
                failures.append(f"{ns}: sorted by plan gives {ws}")
        Select(driver.find_element(By.ID, "sort")).select_by_value("name")
        for ns, ws in order().items():
            if [n for n, _ in ws] != sorted(n for n, _ in ws):
                failures.append(f"{ns}: sorted by name gives {[n for n, _ in ws]}")

        if shot:
            height = driver.execute_script("return document.body.scrollHeight")
            driver.set_window_size(1280, min(max(height, 600), 2400))
            driver.save_screenshot(shot)
        print(f"report in chromium: {len(want_names)} namespaces, {checked} numbers match the JSON, "
              f"{len(requested)} request (the page), filter and sort work")
    finally:
        driver.quit()
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
