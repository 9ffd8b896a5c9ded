"""How light ``ccxml show``'s pages are: size, time to write, time to open in a browser.

    python benchmarks/bench_show.py

For ring AllReduce on 8, 64 and 256 ranks (dgx-h100 nodes of 8, 64M): the time to build and
write the HTML page and the SVG (``ccxml show`` in process, best of 3), their sizes, and, where
headless Chromium and chromedriver are installed (``apt-get install chromium chromium-driver``,
selenium), the page's load in the browser: until DOMContentLoaded (parsing the page with its data)
and the page script's own time (decoding the data and drawing), best of 3.
"""
from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))                      # this checkout
from build_check import announce  # noqa: E402 - benchmarks/build_check.py
from calibration import calibration_line  # noqa: E402

from ccxml.cli.app import main as ccxml  # noqa: E402

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1400,1000"]


def write(args: list[str], out: str) -> float:
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                ccxml(["show", *args, "-o", out])
        except SystemExit as e:
            if e.code:
                raise
        best = min(best, time.perf_counter() - t0)
    return best


def browser(profile: str):
    chromium, driver = shutil.which("chromium") or shutil.which("chromium-browser"), shutil.which("chromedriver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        return None
    if not chromium or not driver:
        return None
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for f in FLAGS + [f"--user-data-dir={profile}"]:
        opts.add_argument(f)
    return webdriver.Chrome(options=opts, service=Service(driver))


def load_ms(d, path: str) -> tuple[float, float]:
    best = (float("inf"), float("inf"))
    for _ in range(3):
        d.get("about:blank")
        d.get("file://" + path)
        dom, script = d.execute_script(
            "return [performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd, ccxmlShow.loadMs]")
        best = min(best, (dom, script))
    return best


def main() -> None:
    announce(times_native=False)        # the simulator and the renderer are never compiled
    print(calibration_line())
    with tempfile.TemporaryDirectory(prefix="bench-show-") as tmp:
        d = browser(os.path.join(tmp, "profile"))
        if d is None:
            print("(no headless Chromium/chromedriver/selenium: browser load times skipped)")
        try:
            for p in (8, 64, 256):
                args = ["ring", "-n", str(p), "-c", "allreduce", "--preset", "dgx-h100", "--nodes", str(p // 8),
                        "--bytes", "64M"]
                html, svg = os.path.join(tmp, f"r{p}.html"), os.path.join(tmp, f"r{p}.svg")
                th, ts = write(args, html), write(args, svg)
                line = (f"ring allreduce p={p:<4} html {os.path.getsize(html) / 1e3:8.0f} kB in {th:5.2f} s   "
                        f"svg {os.path.getsize(svg) / 1e3:8.0f} kB in {ts:5.2f} s")
                if d is not None:
                    dom, script = load_ms(d, html)
                    line += f"   browser: DOMContentLoaded {dom:6.0f} ms, script {script:5.0f} ms"
                print(line, flush=True)
        finally:
            if d is not None:
                d.quit()


if __name__ == "__main__":
    main()
