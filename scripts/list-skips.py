#!/usr/bin/env python3
"""Lists every test that was skipped, with its reason, from the logs of a test run: CTest's
JUnit files (ctest --output-junit) and `go test -v` logs. Prints nothing but a heading and "none"
when nothing was skipped.

    list-skips.py TITLE FILE...
"""
import re
import sys
import xml.etree.ElementTree as ET


def ctest_skips(path):
    out = []
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError):
        return out
    for case in root.iter("testcase"):
        skipped = case.find("skipped")
        if skipped is None:
            continue
        reason = (skipped.get("message") or "").strip()
        text = (case.findtext("system-out") or "").strip()
        # A corpus test says why it did not run in its output (tests/test_util.h).
        for line in text.splitlines():
            if line.startswith("Filters:"):
                continue
            if "not found" in line or "SKIPPED" in line or "skipped;" in line:
                reason = line.strip()
                break
        out.append((case.get("name", "?"), reason or "skipped"))
    return out


def go_skips(path):
    out, current, said = [], None, {}
    run = re.compile(r"^=== (RUN|CONT)\s+(\S+)")
    skip = re.compile(r"^\s*--- SKIP: (\S+)")
    message = re.compile(r"^\s+\S+\.go:\d+: (.*)")
    try:
        lines = open(path, errors="replace").read().splitlines()
    except OSError:
        return out
    for line in lines:
        m = run.match(line)
        if m:
            current = m.group(2)
            continue
        m = skip.match(line)
        if m:
            name = m.group(1)
            out.append((name, said.get(name, "skipped")))
            continue
        m = message.match(line)
        if m and current:
            said[current] = m.group(1)
            # A part of a test that did not run says so: "SKIPPED the cgroup v2 branch: ...".
            if m.group(1).startswith("SKIPPED "):
                out.append((current, m.group(1)[len("SKIPPED "):]))
        # A suite that skips itself as a whole says so on its own line.
        if line.startswith("SKIPPED "):
            out.append(("(whole package)", line[len("SKIPPED "):]))
    return out


def main():
    title, files = sys.argv[1], sys.argv[2:]
    skips = []
    for f in files:
        skips += ctest_skips(f) if f.endswith(".xml") else go_skips(f)
    print(f"{title}: {len(skips) or 'none'}")
    for name, reason in sorted(set(skips)):
        print(f"  {name}: {reason}")


if __name__ == "__main__":
    main()
