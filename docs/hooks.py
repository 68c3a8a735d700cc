"""MkDocs hooks (`hooks:` in mkdocs.yml).

* The generated parts of the pages (the command line's `--help`, the performance
  tables) and the inline figures of their sentences (`{{ figure: FILE.NAME }}`) are
  filled in from the code, the Makefile and results/*.json: see docs/gen_pages.py.
* The plots of results/ are served as site/results/..., so the pages show the figures
  the experiments wrote without a copy under docs/.
* The tutorials' links to other pages name their sources; they are pointed at the
  built pages here: see docs/notebook_links.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mkdocs.structure.files import File

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_pages  # noqa: E402
import notebook_links  # noqa: E402


def on_files(files, config):
    for png in sorted(gen_pages.RESULTS.rglob("*.png")):
        uri = "results/" + png.relative_to(gen_pages.RESULTS).as_posix()
        if uri.startswith("results/local/") or "quick" in png.name:
            continue  # plain runs and smoke runs, not the published figures
        files.append(File.generated(config, uri, abs_src_path=str(png)))
    return files


def on_page_markdown(markdown, page, config, files):
    return gen_pages.fill(markdown)


def on_page_content(html, page, config, files):
    if not page.file.src_uri.endswith(".ipynb"):
        return html  # MkDocs resolves a Markdown page's links itself

    def url_of(source):
        target = files.get_file_from_path(source)
        return None if target is None else target.url_relative_to(page.file)

    return notebook_links.resolve(html, page.file.src_uri, url_of)
