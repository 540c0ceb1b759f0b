"""The built documentation site as a reader sees it (``-m docs``; ``make docs`` builds the site
and runs these): nothing is loaded from another host (an air-gapped docs server serves it whole,
code coloured at build time), no reStructuredText shows through, every page shows the version,
and in headless Chromium no page reaches past the right edge at a laptop's width (1280 px) or a
narrow one (800 px), nor is a wall, and the home and getting-started pages screenshot as pages.

The site is ``$TJAP_DOCS_SITE`` when set (``make docs`` passes the one it just built), else it
is built here. Chromium is Debian's package (``bash .ci/install-chromium``, called by ``make
docs``); without it the browser checks skip, saying so. ``TJAP_DOCS_SCREENSHOTS=DIR`` also
writes the two screenshots to DIR (the README's are ``docs/images/``).
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from browser import chromium, find_chromium, png_size

import tjap

pytestmark = pytest.mark.docs

ROOT = Path(__file__).resolve().parents[2]
WIDTHS = (1280, 800)
#: The tallest page allowed at 1280 px (the switch-tree reference was once one 48,000 px page).
MAX_HEIGHT_PX = 30_000
SCREENSHOTS = {"home.png": "index.html", "getting-started.png": "getting-started/index.html"}
SCREEN = (1280, 800)

# Run in each page once it has loaded: report the page's width and height, the first elements
# that reach past the right edge of the window, or past a box that clips them (overflow hidden),
# without a box of their own that scrolls, and the tables that scroll in their box. The theme's
# sidebar scroll box is 20 px wider than the sidebar on purpose (it hides its scrollbar that way)
# and is skipped; its contents are checked. It runs half a second after the load event, once the
# theme's own scripts (jQuery's ready handlers run late) have wrapped the tables.
PROBE = r"""
window.addEventListener("load", function () { setTimeout(function () {
  var root = document.documentElement, width = window.innerWidth, bad = [];
  function cutOff(el, r) {
    for (var p = el.parentElement; p && p !== root; p = p.parentElement) {
      var o = getComputedStyle(p).overflowX;
      if (o === "auto" || o === "scroll") return false;
      if ((o === "hidden" || o === "clip") && r.right > p.getBoundingClientRect().right + 1)
        return true;
    }
    return r.right > width + 1;
  }
  document.querySelectorAll("body *").forEach(function (el) {
    if (el.classList.contains("wy-side-scroll")) return;
    var r = el.getBoundingClientRect();
    if (r.width > 0 && r.height > 0 && cutOff(el, r) && bad.length < 5)
      bad.push(el.tagName.toLowerCase() + " reaching " + Math.round(r.right) + " px: "
               + (el.textContent || "").replace(/\s+/g, " ").slice(0, 80));
  });
  var scrolled = [];  // tables whose rows are wider than the box they scroll in
  document.querySelectorAll(".rst-content table").forEach(function (table) {
    var rows = 0;
    table.querySelectorAll("tr").forEach(function (tr) {
      rows = Math.max(rows, tr.getBoundingClientRect().width);
    });
    for (var box = table; box && box !== root; box = box.parentElement) {
      var o = getComputedStyle(box).overflowX;
      if (o === "auto" || o === "scroll") {
        if (rows > box.clientWidth + 1 && scrolled.length < 5)
          scrolled.push((table.textContent || "").replace(/\s+/g, " ").slice(0, 80));
        return;
      }
    }
  });
  document.title = "PROBE " + JSON.stringify({scroll_width: root.scrollWidth, width: width,
    height: root.scrollHeight, cut_off: bad, tables_scrolled: scrolled});
}, 500); });
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    given = os.environ.get("TJAP_DOCS_SITE")
    if given:
        path = Path(given).resolve()
        assert (path / "index.html").is_file(), f"TJAP_DOCS_SITE={given} holds no built site"
        return path
    path = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return path


def pages(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("index.html"))


def main_text(page: Path) -> str:
    """The page's main column as text, code blocks (<pre>) left out."""
    text = page.read_text()
    text = text[text.find('<div role="main"') :]
    text = re.sub(r"<pre\b.*?</pre>", " ", text, flags=re.DOTALL)
    return html.unescape(re.sub(r"<[^>]+>", "", text))


def test_nothing_is_loaded_from_another_host(site):
    remote = re.compile(r"""^(?:https?:)?//""")
    loaded = re.compile(
        r"""<(?:script|img|iframe)\b[^>]*\bsrc=["']([^"']+)|"""
        r"""<link\b[^>]*\bhref=["']([^"']+)"""
    )
    found = []
    for page in site.rglob("*.html"):
        for match in loaded.finditer(page.read_text()):
            url = match.group(1) or match.group(2)
            if remote.match(url):
                found.append(f"{page.relative_to(site)}: {url}")
    for css in site.rglob("*.css"):
        for url in re.findall(r"""(?:url\(|@import\s+)["']?([^"')\s]+)""", css.read_text()):
            if remote.match(url):
                found.append(f"{css.relative_to(site)}: {url}")
    assert not found, f"loaded from another host: {found[:10]}"
    home = (site / "index.html").read_text()
    assert "highlight.js" not in home and "hljs" not in home
    assert 'href="css/pygments.css"' in home and '<span class="kn">import</span>' in home, (
        "code is not coloured at build time"
    )


def test_no_restructured_text_shows_through(site):
    patterns = {
        "double backticks": r"``",
        "a Sphinx role": r":(?:class|func|mod|meth|attr|data|"
        r"exc|obj|py):`",
        "a literal-block marker": r"\w::(?:\s|$)",
        "a directive": r"(?m)^\s*\.\. \w+::",
    }
    found = []
    for page in pages(site):
        text = main_text(page)
        for what, pattern in patterns.items():
            for match in re.finditer(pattern, text):
                context = " ".join(text[max(0, match.start() - 60) : match.end() + 40].split())
                found.append(f"{page.relative_to(site)}: {what}: ...{context}...")
    assert not found, "\n".join(found[:20])


def test_docstrings_name_no_private_module_as_code(site):
    """A private module or object (``tjap.heuristics.tree._kernels``) has no page: the reference
    names it by its source file instead (``heuristics/tree/_kernels.py``)."""
    private = re.compile(r"<code>(tjap(?:\.\w+)*\._\w+[\w.]*)</code>")
    found = [
        f"{page.relative_to(site)}: {name}"
        for page in pages(site / "reference")
        for name in private.findall(page.read_text())
    ]
    assert not found, found[:10]


def test_every_page_shows_the_version(site):
    version = tjap.__version__
    for page in pages(site):
        text = page.read_text()
        title = re.search(r"<title>(.*?)</title>", text).group(1)
        assert title.endswith(f"tjap {version}"), f"{page.relative_to(site)}: title {title!r}"
        assert f"tjap {version} · MIT licence" in text, f"{page.relative_to(site)}: no footer"


def probed(site: Path, tmp_path: Path) -> list[tuple[str, int, dict | None]]:
    """Every page at every width of :data:`WIDTHS`: what :data:`PROBE` reports."""
    copy = tmp_path / "site"
    shutil.copytree(site, copy)
    for page in pages(copy):
        page.write_text(page.read_text().replace("</body>", f"<script>{PROBE}</script></body>"))

    def one(job):
        index, (page, width) = job
        out = chromium(
            "--dump-dom",
            page.as_uri(),
            width=width,
            height=900,
            profile=tmp_path / f"profile{index}",
        )
        match = re.search(r"<title>PROBE (.*?)</title>", out)
        return (
            page.relative_to(copy).as_posix(),
            width,
            json.loads(html.unescape(match.group(1))) if match else None,
        )

    jobs = list(enumerate((page, width) for page in pages(copy) for width in WIDTHS))
    with ThreadPoolExecutor(max(2, min(8, os.cpu_count() or 2))) as pool:
        return list(pool.map(one, jobs))


def test_no_page_reaches_past_the_right_edge(site, tmp_path):
    if find_chromium() is None:
        pytest.skip("chromium is not installed: run `bash .ci/install-chromium` (root, apt-get)")
    problems = []
    for page, width, report in probed(site, tmp_path):
        if report is None:
            problems.append(f"{page} at {width} px: the page did not load")
            continue
        if report["scroll_width"] > report["width"]:
            problems.append(f"{page} at {width} px: {report['scroll_width']} px wide")
        problems += [f"{page} at {width} px: {cut}" for cut in report["cut_off"]]
        if width == 1280:  # on a laptop's screen tables fit and no page is a wall
            problems += [
                f"{page} at 1280 px: a table scrolls: {table}"
                for table in report["tables_scrolled"]
            ]
            if report["height"] > MAX_HEIGHT_PX:
                problems.append(f"{page}: {report['height']} px tall, a wall (split it)")
    assert not problems, "\n".join(problems)


def test_screenshots_of_the_home_and_getting_started_pages(site, tmp_path):
    if find_chromium() is None:
        pytest.skip("chromium is not installed: run `bash .ci/install-chromium` (root, apt-get)")
    from PIL import Image

    keep = os.environ.get("TJAP_DOCS_SCREENSHOTS")
    for name, page in SCREENSHOTS.items():
        shot = tmp_path / name
        chromium(
            f"--screenshot={shot}",
            (site / page).as_uri(),
            width=SCREEN[0],
            height=SCREEN[1],
            profile=tmp_path / f"profile-{name}",
        )
        assert shot.is_file(), f"no screenshot of {page}"
        assert png_size(shot) == SCREEN
        with Image.open(shot) as image:
            colours = image.convert("RGB").getcolors(maxcolors=1 << 16)
        assert colours is None or len(colours) > 50, f"the screenshot of {page} is blank"
        if keep:
            with Image.open(shot) as image:  # a palette PNG: a few tens of KB for the README
                image.convert("RGB").quantize(colors=128).save(Path(keep) / name, optimize=True)
