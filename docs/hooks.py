"""MkDocs hooks: fill the generated parts of the pages (see gen_reference.py) at build time, link
every picture to its full-size file (shown at column width, a wide picture's labels can be too
small to read), and point the notebook's links at the site's pages.

The notebook links to pages as a reader in Jupyter opens them, by their files (``../concepts.md``);
mkdocs-jupyter copies those links as they are, so on the site they would name files under
``tutorial/`` that do not exist. Here they become the pages' addresses, and one that names no page
is a warning (an error under ``mkdocs build --strict``), as a broken link of a Markdown page is.
A link to the notebook itself (its download link) stays: mkdocs-jupyter copies the file beside
the page, under the same name. The notebook's pictures (``../diagrams/masks.png``) are files of the
site too, found and pointed at the same way, so one PNG serves Jupyter, the site and the pages.
"""

from __future__ import annotations

import logging
import posixpath
import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path[:0] = [str(DOCS), str(DOCS.parent)]  # gen_reference, and minitrans from this checkout

import gen_reference  # noqa: E402

log = logging.getLogger("mkdocs.hooks.notebook_links")
MARKDOWN_LINK = re.compile(r'href="(?!https?:|mailto:|#)([^"#]+\.(?:md|ipynb))(#[^"]*)?"')
PICTURE_SOURCE = re.compile(r'(<img\b[^>]*\bsrc=")(?!https?:|data:|/)([^"]+)"')
# A link and what it holds, or a picture outside any link
LINK_OR_PICTURE = re.compile(r"<a\b[^>]*>.*?</a>|(<img\b[^>]*\bsrc=\"(?!data:)([^\"]+)\"[^>]*>)", re.S)


def on_page_markdown(markdown: str, **kwargs) -> str:
    return gen_reference.expand(markdown)


def linked_pictures(html: str) -> str:
    """Each picture that sits in no link, wrapped in a link to its own file."""

    def link(match: re.Match) -> str:
        if match.group(1) is None:  # a link, pictures inside it included: kept as it is
            return match.group(0)
        return f'<a href="{match.group(2)}" title="full size">{match.group(1)}</a>'

    return LINK_OR_PICTURE.sub(link, html)


def notebook_pictures(html: str, page, files) -> str:
    """A notebook's pictures, given by their files as Jupyter opens them, at their site addresses."""

    def to_file(match: re.Match) -> str:
        path = posixpath.normpath(posixpath.join(posixpath.dirname(page.file.src_uri), match.group(2)))
        target = files.get_file_from_path(path)
        if target is None:
            log.warning("%s shows %s, which is not a file of the site", page.file.src_uri, match.group(2))
            return match.group(0)
        return f'{match.group(1)}{target.url_relative_to(page.file)}"'

    return PICTURE_SOURCE.sub(to_file, html)


def on_page_content(html: str, page, files, **kwargs) -> str:
    if not page.file.src_uri.endswith(".ipynb"):
        return linked_pictures(html)
    html = linked_pictures(notebook_pictures(html, page, files))

    def to_page(match: re.Match) -> str:
        path = posixpath.normpath(posixpath.join(posixpath.dirname(page.file.src_uri), match.group(1)))
        target = files.get_file_from_path(path)
        if target is page.file:  # the notebook's own download link: mkdocs-jupyter copies it beside the page
            return match.group(0)
        if target is None:
            log.warning("%s links to %s, which is not a page of the site", page.file.src_uri, match.group(1))
            return match.group(0)
        return f'href="{target.url_relative_to(page.file)}{match.group(2) or ""}"'

    return MARKDOWN_LINK.sub(to_page, html)
