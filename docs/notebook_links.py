"""Links in the tutorials' Markdown cells, pointed at the built pages.

A notebook links to the other pages by their sources (`../solvers.md#monte-carlo-cfr`,
`own_game.ipynb`), as the guides do, so the links also work where the notebook is read
on its own (on GitHub, in Jupyter). MkDocs resolves such links in Markdown pages only;
a notebook's HTML comes from nbconvert, so `resolve` turns them into the built pages'
addresses, and a link to no page stops the build as a broken link in a guide does.
"""

from __future__ import annotations

import posixpath
import re
from typing import Callable, Optional

# A relative link to a page's source: no scheme, not an anchor, not from the root.
SOURCE_LINK = re.compile(r'href="(?![a-zA-Z][a-zA-Z0-9+.-]*:|[#/])([^"#]+\.(?:md|ipynb))(#[^"]*)?"')


def resolve(html: str, src_uri: str, url_of: Callable[[str], Optional[str]]) -> str:
    """`html`, the page built from `src_uri`, with every link to a page's source replaced
    by `url_of(source)`: the target's address relative to this page, None if no page
    has that source (a ValueError naming the link)."""
    def replace(match: re.Match) -> str:
        link, anchor = match.group(1), match.group(2) or ""
        source = posixpath.normpath(posixpath.join(posixpath.dirname(src_uri), link))
        url = url_of(source)
        if url is None:
            raise ValueError(f"{src_uri}: the link {link!r} names no page of the docs "
                             f"({source})")
        return f'href="{url}{anchor}"'

    return SOURCE_LINK.sub(replace, html)
