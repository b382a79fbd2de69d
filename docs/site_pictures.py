"""The site check's rules for pictures and tables: each picture links to its full-size file, none
is wider than its column, its smallest text is at least :data:`MIN_TEXT_PX` high as the page shows
it, and no table runs past its column.

A PNG the project draws records the font size of its smallest text in pixels of the file
(``minitrans.core.pictures.TEXT_PX_KEY``); shown at a fraction of its width, the text shrinks by
the same fraction. A picture that records nothing (a screenshot, or one drawn before the record
existed) cannot be measured: it is counted, and named with ``--list-unmeasured``.
"""

from __future__ import annotations

import posixpath
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

from PIL import Image

from minitrans.core.pictures import TEXT_PX_KEY

MIN_TEXT_PX = 9.0  # the smallest label a reader reads at page width, in CSS px
# Every picture and table of a page's article, as the browser lays them out: its file, its width
# in the file and on the page, and the width of the column it sits in
MEASURE = """
const article = document.querySelector('article') || document.body, style = getComputedStyle(article);
const column = article.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
const pictures = Array.from(article.querySelectorAll('img')).map(img =>
  [img.currentSrc || img.src, img.naturalWidth, img.getBoundingClientRect().width, column]);
const tables = Array.from(article.querySelectorAll('table')).map(table => {
  const box = table.closest('.md-typeset__scrollwrap') || table.parentElement;
  return [table.scrollWidth, box.clientWidth, (table.textContent || '').trim().slice(0, 40)];
});
return [pictures, tables];
"""


class _Pictures(HTMLParser):
    """The pictures of a page with the link each sits in (None outside any link)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.pictures: list[tuple[str, str | None]] = []
        self._links: list[str | None] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = dict(attrs)
        if tag == "a":
            self._links.append(attr.get("href"))
        elif tag == "img" and attr.get("src"):
            inside = next((href for href in reversed(self._links) if href), None)
            self.pictures.append((attr["src"], inside))

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._links:
            self._links.pop()


def pictures_of(html: str) -> list[tuple[str, str | None]]:
    parser = _Pictures()
    parser.feed(html)
    return parser.pictures


def _file(page: str, address: str) -> str:
    """The site path an address on ``page`` names, without its query or fragment."""
    return posixpath.normpath(posixpath.join(posixpath.dirname(page), unquote(urlsplit(address).path)))


def unlinked_pictures(site: Path, pages: dict[str, str]) -> list[str]:
    """Pictures (files, not inline data) that do not link to their own full-size file."""
    problems = []
    for name, html in pages.items():
        for src, href in pictures_of(html):
            if src.startswith("data:") or "://" in src:
                continue
            if href is None or _file(name, href) != _file(name, src):
                problems.append(f"{name}: picture {src} is not linked to its full size")
    return problems


def text_px(path: Path) -> float | None:
    """The smallest text of a PNG, in px of the file, as its writer recorded it (None if it did not)."""
    try:
        with Image.open(path) as image:
            value = image.info.get(TEXT_PX_KEY)
    except (OSError, ValueError):
        return None
    return float(value) if value else None


def measured_problems(name: str, pictures: list, tables: list) -> tuple[list[str], list[str]]:
    """(problems, unmeasured pictures) of one page from what :data:`MEASURE` returned."""
    problems, unmeasured = [], []
    for address, natural, shown, column in pictures:
        if address.startswith("data:"):
            continue
        path = Path(unquote(urlsplit(address).path))
        label = path.name
        if shown > column + 1:
            problems.append(f"{name}: picture {label} is {shown:.0f} px wide, its column {column:.0f} px")
        px = text_px(path)
        if px is None:
            unmeasured.append(f"{name}: {label}")
        elif natural and px * shown / natural < MIN_TEXT_PX:
            seen = px * shown / natural
            problems.append(
                f"{name}: picture {label}: its smallest text is {seen:.1f} px at page width (under {MIN_TEXT_PX:g})"
            )
    for width, column, start in tables:
        if width > column + 1:
            problems.append(f"{name}: table {width} px wide, {width - column} px more than its column: {start}…")
    return problems, unmeasured
