"""``ccxml show``'s HTML page in a real browser: headless Chromium driven by selenium.

Skipped, with how to install one, where no Chromium and chromedriver are found (Debian:
``apt-get install -y chromium chromium-driver``; ``.ci/run`` installs them).
"""
from __future__ import annotations

import shutil

import pytest
from in_process import ccxml
from show_pages import HOSTILE_NAME, RCS, RCS_DEP, RCS_PEERS, small_xml

INSTALL = ("apt-get install -y chromium chromium-driver (Debian; other systems: a Chromium and its "
           "chromedriver on PATH) and pip install 'ccxml[test]' for selenium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1400,1000"]
#: the page's highlight colours (page.js): a dependency, a peer
DEP, PEER = (224, 64, 192), (0, 165, 200)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip(f"browser tests need selenium and headless Chromium: {INSTALL}")
    chromium = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
    driver = shutil.which("chromedriver")
    if chromium is None or driver is None:
        pytest.skip(f"no headless Chromium/chromedriver found for the browser tests: {INSTALL}")
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for flag in FLAGS + [f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"]:
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(options=opts, service=Service(driver))
    try:
        yield d
    finally:
        d.quit()


def show(tmp_path, *args) -> str:
    """Run ``ccxml show ARGS -o page.html`` in process; the page's path."""
    out = tmp_path / "page.html"
    code, _, err = ccxml("show", *args, "-o", out)
    assert code == 0, err
    return str(out)


def problems(d) -> list[str]:
    """Console errors and warnings since the last call (the browser's log is read and emptied)."""
    return [f"{e['level']}: {e['message']}" for e in d.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]


def load(d, path: str) -> None:
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait
    d.get("file://" + path)
    try:
        WebDriverWait(d, 20).until(lambda d: d.execute_script("return document.body.dataset.ready") == "1")
    except TimeoutException:
        pytest.fail(f"the page did not finish drawing: {problems(d)}")


def rows(d) -> int:
    return int(d.execute_script("return document.getElementById('steps').dataset.rows"))


#: does the canvas show ``rgb`` within 4 px of step k's bar? (device pixels read back from the canvas)
HAS_COLOR = """
var k = arguments[0], rgb = arguments[1], b = ccxmlShow.box(k), c = document.getElementById('steps');
var r = c.getBoundingClientRect(), s = c.width / r.width;
var x = Math.max(0, Math.floor((b.x - r.left - 4) * s)), y = Math.max(0, Math.floor((b.y - r.top - 4) * s));
var w = Math.ceil((b.w + 8) * s), h = Math.ceil((b.h + 8) * s), o = document.createElement('canvas');
o.width = w; o.height = h;
var ox = o.getContext('2d', {willReadFrequently: true});
ox.drawImage(c, -x, -y);
var px = ox.getImageData(0, 0, w, h).data;
for (var i = 0; i < px.length; i += 4)
  if (Math.abs(px[i] - rgb[0]) < 10 && Math.abs(px[i + 1] - rgb[1]) < 10 && Math.abs(px[i + 2] - rgb[2]) < 10) return true;
return false;
"""


@pytest.fixture(scope="module")
def small_page(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("small")
    xml = tmp / "small.xml"
    xml.write_text(small_xml())
    return show(tmp, str(xml), "--bytes", "3K")


def test_page_loads_clean_with_one_row_per_thread_block_and_a_rank_filter(browser, small_page):
    d = browser
    load(d, small_page)
    assert problems(d) == []
    assert rows(d) == 5
    # the hostile name is text: in the title and the heading, and nothing it carries ran
    assert d.title == f"ccxml show: small.xml ({HOSTILE_NAME})"
    assert HOSTILE_NAME in d.find_element("id", "title").text
    assert d.execute_script("return [window.pwned, document.scripts.length, document.images.length]") == [None, 2, 0]
    box = d.find_element("id", "ranks")
    box.send_keys("1")
    assert rows(d) == 3                                 # rank 1's three thread blocks
    box.clear()
    box.send_keys("0,2")
    assert rows(d) == 2
    box.send_keys("-x")
    assert "bad" in box.get_attribute("class") and rows(d) == 2
    assert problems(d) == []


def test_clicking_a_step_highlights_its_dependency_and_its_peers(browser, small_page):
    from selenium.webdriver.common.action_chains import ActionChains
    d = browser
    load(d, small_page)
    k, dep = (d.execute_script("return ccxmlShow.stepAt(arguments[0], arguments[1], arguments[2])", *ref)
              for ref in (RCS, RCS_DEP))
    peers = [d.execute_script("return ccxmlShow.stepAt(arguments[0], arguments[1], arguments[2])", *p)
             for p in RCS_PEERS]
    assert not d.execute_script(HAS_COLOR, dep, DEP)
    assert not any(d.execute_script(HAS_COLOR, p, PEER) for p in peers)
    canvas = d.find_element("id", "steps")
    b, c = d.execute_script("return [ccxmlShow.box(arguments[0]), arguments[1].getBoundingClientRect()]", k, canvas)
    ActionChains(d).move_to_element_with_offset(canvas, b["x"] + b["w"] / 2 - c["left"] - c["width"] / 2,
                                                b["y"] + b["h"] / 2 - c["top"] - c["height"] / 2).click().perform()
    state = canvas.get_attribute("data-selected"), canvas.get_attribute("data-deps"), canvas.get_attribute("data-peers")
    assert state == (str(k), str(dep), " ".join(map(str, peers)))
    assert d.execute_script(HAS_COLOR, dep, DEP)
    assert all(d.execute_script(HAS_COLOR, p, PEER) for p in peers)
    details = " ".join(d.find_element("id", "details").text.split())
    assert "r1 tb0 step 1 rcs (fused)" in details
    assert "waits for r1 tb1 step 1 cpy" in details
    assert "data from r0 tb0 step 1 s" in details and "data to r2 tb0 step 0 r" in details
    assert problems(d) == []


def test_64_rank_ring_allreduce_page_loads_without_console_errors(browser, tmp_path):
    d = browser
    page = show(tmp_path, "ring", "-n", "64", "-c", "allreduce", "--preset", "dgx-h100", "--nodes", "8",
                "--bytes", "64M")
    load(d, page)
    assert problems(d) == []
    assert rows(d) == 192                               # 64 ranks x 3 channels' thread blocks
    # and it stays usable: zoom, filter, select
    d.find_element("id", "zoom-in").click()
    d.find_element("id", "ranks").send_keys("60-63")
    d.execute_script("ccxmlShow.select(ccxmlShow.stepAt(63, 0, 5))")
    assert rows(d) == 12
    assert "r63 tb0 step 5" in d.find_element("id", "details").text
    assert problems(d) == []


def test_a_name_that_is_not_ascii_shows_as_written(browser, tmp_path):
    name = "café ☕ 名前"
    xml = tmp_path / "café.xml"
    xml.write_bytes(small_xml(name=name).encode("utf-8"))
    d = browser
    load(d, show(tmp_path, str(xml), "--bytes", "3K"))
    assert d.title == f"ccxml show: café.xml ({name})"
    assert name in d.find_element("id", "title").text and "Ã" not in d.find_element("id", "title").text
    assert problems(d) == []
