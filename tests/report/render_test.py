#!/usr/bin/env python3
"""`autobatch report` end to end: traces of fib over 8 threads in every format
become pages that headless Chromium renders with a timeline, per-block
utilization, divergence and a depth histogram; the screenshot is not blank
(much larger than the same window's blank page). Exit 77 (skip) only when
chromium is absent.

usage: render_test.py AUTOBATCH SOURCE_DIR WORK_DIR [SCREENSHOT_COPY]"""
import os
import re
import shutil
import subprocess
import sys

autobatch, source, work = sys.argv[1], sys.argv[2], sys.argv[3]
copy_to = sys.argv[4] if len(sys.argv) > 4 else None
os.makedirs(work, exist_ok=True)
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=240, **kw)


fib = os.path.join(source, "programs", "fib.ab")
inputs = '{"n": [1, 2, 3, 4, 5, 6, 7, 8]}'
pages = {}
for fmt in ["auto", "jsonl", "compact", "chrome"]:
    trace = os.path.join(work, "fib." + fmt)
    page = os.path.join(work, "fib." + fmt + ".html")
    for f in (trace, page):
        if os.path.exists(f):
            os.remove(f)
    r = run([autobatch, "run", fib, "--inputs", inputs, "--trace", trace, "--trace-format", fmt])
    check(r.returncode == 0, f"run --trace-format {fmt}: exit {r.returncode} {r.stderr}")
    r = run([autobatch, "report", trace, "-o", page])
    check(r.returncode == 0, f"report of the {fmt} trace: exit {r.returncode} {r.stderr}")
    if r.returncode != 0:
        continue
    html = open(page, encoding="utf-8").read()
    # Self-contained: nothing loaded from elsewhere.
    check(not re.search(r'<(script|img|link|iframe)[^>]*\s(src|href)=', html),
          f"{fmt}: the page loads something from elsewhere")
    check("fib.recur" in html or "fib.entry" in html, f"{fmt}: the page names no block of fib")
    pages[fmt] = page

# A file that is not a trace: a located message, exit 2.
bad = os.path.join(work, "bad.jsonl")
open(bad, "w").write('{"trace": "autobatch", "version": 1, "vm": "stack", "batch": 2, "blocks": ["a"]}\nnot json\n')
r = run([autobatch, "report", bad, "-o", os.path.join(work, "bad.html")])
check(r.returncode == 2 and "bad.jsonl:2:" in r.stderr, f"bad trace: exit {r.returncode} {r.stderr}")
check(not os.path.exists(os.path.join(work, "bad.html")), "bad trace: a page was written")

chromium = shutil.which("chromium") or shutil.which("chromium-browser")
if not chromium:
    print("SKIP: chromium not installed")
    sys.exit(77 if not failures else 1)

base = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
        "--no-first-run", "--disable-extensions", "--user-data-dir=" + os.path.join(work, "profile")]


def dom(page):
    r = run(base + ["--virtual-time-budget=5000", "--dump-dom", "file://" + page])
    return r.stdout


for fmt, page in pages.items():
    if fmt == "auto":
        continue
    d = dom(page)
    check('data-rendered="yes"' in d, f"{fmt}: the page's script did not finish")
    check('id="timeline-svg"' in d, f"{fmt}: no timeline")
    check(len(re.findall(r'class="series"', d)) >= 2, f"{fmt}: the timeline has fewer than 2 blocks")
    check(re.search(r'<table id="block-utilization">.*?fib\.entry', d, re.S) is not None,
          f"{fmt}: no utilization row for fib.entry")
    check(re.search(r'<table id="block-utilization">.*?class="bar"', d, re.S) is not None,
          f"{fmt}: no utilization bars")
    check(re.search(r'<table id="function-utilization">.*?<th>function</th>.*?fib', d, re.S) is not None, f"{fmt}: no function table")
    check(len(re.findall(r'class="depth-bar"', d)) >= 5, f"{fmt}: the depth histogram has < 5 bars")
    check(re.search(r'<table id="divergence">.*?fib\.entry', d, re.S) is not None,
          f"{fmt}: fib.entry (where fib's threads split) is not among the divergent blocks")
    # Blocks in source terms: each row names its line and statement.
    check(re.search(r'<table id="block-utilization">.*?fib\.ab:\d+', d, re.S) is not None,
          f"{fmt}: the block table gives no source line")
    check(re.search(r'<table id="block-utilization">.*?<code>if n', d, re.S) is not None,
          f"{fmt}: the block table does not show fib's `if` statement")

# Screenshot: a rendered page against a blank one of the same window.
shot = os.path.join(work, "report.png")
blank_html = os.path.join(work, "blank.html")
blank = os.path.join(work, "blank.png")
open(blank_html, "w").write("<!DOCTYPE html><html><body></body></html>")
for f in (shot, blank):
    if os.path.exists(f):
        os.remove(f)
size = "--window-size=1040,1700"
run(base + [size, "--virtual-time-budget=5000", "--screenshot=" + shot, "file://" + pages["jsonl"]])
run(base + [size, "--screenshot=" + blank, "file://" + blank_html])
check(os.path.exists(shot) and os.path.exists(blank), "no screenshot")
if os.path.exists(shot) and os.path.exists(blank):
    a, b = os.path.getsize(shot), os.path.getsize(blank)
    print(f"screenshot {a} bytes, blank page {b} bytes")
    check(a > 4 * b and a > 20000, f"the screenshot looks blank ({a} bytes against {b})")
    if copy_to:
        shutil.copyfile(shot, copy_to)

if failures:
    print(len(failures), "failure(s)")
    sys.exit(1)
print("ok")
