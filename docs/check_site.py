"""Opens the built site in headless Chromium and checks that pages render whole.

    python docs/check_site.py [--site site] [--shots /tmp/jaxsolve-site]   # `make docs-check`

Serves `site/` on a free localhost port, then for each of four pages (the home page,
a guide, a notebook, an API page):

* `chromium --headless --dump-dom` renders it (scripts run) and the rendered DOM is
  read back: its title and main heading must be there, and every asset it loads
  (`<link href>`, `<script src>`, `<img src>`, inline `url(...)` images aside) must be
  a file of the site: no missing file, and nothing fetched from another host;
* the server's log must show no request answered 404 while Chromium loaded the page;
* `chromium --headless --screenshot` writes a PNG under --shots, to look at.

Without Chromium (Debian's `chromium` package: `apt-get install chromium`) it says so
and exits 0 without checking anything; any failure exits 1.
"""

from __future__ import annotations

import argparse
import functools
import html.parser
import http.server
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

ROOT = Path(__file__).resolve().parent.parent
PAGES = (  # (path in the site, a text its rendered DOM must contain)
    ("index.html", "What is in the box"),
    ("own-game.html", "The protocol"),
    ("tutorials/kuhn_and_leduc.html", "exploitability:"),
    ("api/solvers.html", "cfr_plus"),
)
BROWSERS = ("chromium", "chromium-browser", "google-chrome")


class _Assets(html.parser.HTMLParser):
    """The URLs a page loads: stylesheets and icons, scripts, images."""

    def __init__(self):
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "link" and a.get("href") and a.get("rel") in (
                "stylesheet", "icon", "preload", "modulepreload", "manifest"):
            self.urls.append(a["href"])
        elif tag == "script" and a.get("src"):
            self.urls.append(a["src"])
        elif tag in ("img", "source") and a.get("src"):
            self.urls.append(a["src"])


class _Log(http.server.SimpleHTTPRequestHandler):
    """A static server that records every request and its status."""

    requests: list[tuple[str, int]] = []

    def log_request(self, code="-", size="-"):
        _Log.requests.append((self.path, int(code) if str(code).isdigit() else 0))

    def log_message(self, *args):
        pass


def _serve(site: Path):
    handler = functools.partial(_Log, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _browser() -> str | None:
    return next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)


def _chromium(browser: str, profile: str, *args: str, timeout: int = 90) -> subprocess.CompletedProcess:
    return subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                           "--disable-dev-shm-usage", "--hide-scrollbars",
                           f"--user-data-dir={profile}", "--virtual-time-budget=5000", *args],
                          capture_output=True, text=True, timeout=timeout)


def check_page(browser: str, profile: str, base: str, site: Path, page: str, expect: str,
               shots: Path) -> list[str]:
    """The problems of one page (empty when it renders whole)."""
    url = urljoin(base, page)
    problems = []
    _Log.requests.clear()
    dom = _chromium(browser, profile, "--dump-dom", url)
    if dom.returncode != 0 or "<html" not in dom.stdout:
        return [f"{page}: chromium could not render it ({dom.stderr.strip()[-300:]})"]
    if expect not in dom.stdout:
        problems.append(f"{page}: the rendered page lacks {expect!r}")
    parser = _Assets()
    parser.feed(dom.stdout)
    for asset in parser.urls:
        if asset.startswith("data:"):
            continue
        target = urlparse(urljoin(url, asset))
        if target.netloc != urlparse(base).netloc:
            problems.append(f"{page}: loads {asset} from another host")
            continue
        path = site / unquote(target.path).lstrip("/")
        if path.is_dir():
            path = path / "index.html"
        if not path.is_file():
            problems.append(f"{page}: {asset} is not a file of the site")
    failed = sorted({p for p, code in _Log.requests if code >= 400})
    problems += [f"{page}: the browser's request for {p} failed" for p in failed]
    shot = shots / (page.replace("/", "_").removesuffix(".html") + ".png")
    done = _chromium(browser, profile, f"--screenshot={shot}", "--window-size=1280,1600", url)
    if done.returncode != 0 or not shot.is_file():
        problems.append(f"{page}: no screenshot ({done.stderr.strip()[-300:]})")
    print(f"{'FAIL' if problems else 'ok  '} {page}: {len(parser.urls)} assets, "
          f"{len(_Log.requests)} requests, screenshot {shot}")
    return problems


def main(argv=None) -> int:
    args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args.add_argument("--site", default=str(ROOT / "site"), help="the built site (make docs)")
    args.add_argument("--shots", default=str(Path(tempfile.gettempdir()) / "jaxsolve-site"),
                      help="folder for the screenshots")
    options = args.parse_args(argv)
    browser = _browser()
    if browser is None:
        print("docs-check: skipped, no Chromium found (apt-get install chromium); "
              "nothing was checked")
        return 0
    site = Path(options.site)
    if not (site / "index.html").is_file():
        print(f"docs-check: {site}/index.html is missing; run `make docs` first")
        return 1
    shots = Path(options.shots)
    shots.mkdir(parents=True, exist_ok=True)
    server = _serve(site)
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    problems = []
    try:
        with tempfile.TemporaryDirectory() as profile:
            for page, expect in PAGES:
                problems += check_page(browser, profile, base, site, page, expect, shots)
    finally:
        server.shutdown()
    for problem in problems:
        print(f"docs-check: {problem}")
    print(f"docs-check: {len(PAGES)} pages, {'FAILED' if problems else 'all render whole'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
