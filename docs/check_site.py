"""Check the built documentation site: every internal link and image resolves (the notebook page's
too, which ``mkdocs build --strict`` does not check), and no code block is wider than its column.

    python docs/check_site.py SITE_DIR             # links, and code widths by character count
    python docs/check_site.py SITE_DIR --browser   # code widths measured in headless Chromium at 1280 px

Prints one line per problem and exits 1 if there is any. Without ``--browser`` a block's width is
estimated from its characters: the site's stylesheet (docs/stylesheets/extra.css) wraps the lines
of Markdown code blocks, so only a notebook output (printed as it is, in columns) or a page without
that stylesheet can be too wide; ``--browser`` measures every block as a reader's browser lays it out.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

STYLESHEET = "stylesheets/extra.css"
# Characters of code that fit one column in a 1280 px window, measured in Chromium: a Markdown block
# holds 637 px of text (688 less its padding and the copy button's), 8.18 px a character; a notebook
# output 579 px, 7.83 px a character
CODE_COLUMN = 77
NOTEBOOK_OUTPUT_COLUMN = 73
EXTERNAL = ("http:", "https:", "mailto:", "data:", "javascript:", "tel:")


class Page(HTMLParser):
    """What one built page holds: its anchors, its links, its stylesheets and its code blocks
    (text, and whether it is a notebook's printed output)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.downloads: list[str] = []  # links with a download attribute: a file, never a page
        self.stylesheets: list[str] = []
        self.blocks: list[tuple[str, bool]] = []
        self._open: list[tuple[str, bool]] = []  # (tag, opens a notebook output) of the open elements
        self._pre: list[str] | None = None
        self._pre_is_output = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = dict(attrs)
        for name in ("id", "name"):
            if attr.get(name) and (name == "id" or tag == "a"):
                self.ids.add(attr[name])
        if tag == "a" and attr.get("href"):
            self.links.append(attr["href"])
            if "download" in attr:
                self.downloads.append(attr["href"])
        if tag == "img" and attr.get("src"):
            self.links.append(attr["src"])
        if tag == "link" and attr.get("rel") == "stylesheet" and attr.get("href"):
            self.stylesheets.append(attr["href"])
        if tag in ("br", "img", "link", "meta", "input", "hr", "source", "wbr"):
            return
        self._open.append((tag, "jp-OutputArea-output" in (attr.get("class") or "").split()))
        if tag == "pre" and self._pre is None:
            self._pre, self._pre_is_output = [], any(output for _, output in self._open)

    def handle_endtag(self, tag: str) -> None:
        if tag == "pre" and self._pre is not None:
            self.blocks.append(("".join(self._pre), self._pre_is_output))
            self._pre = None
        while self._open:
            if self._open.pop()[0] == tag:
                break

    def handle_data(self, data: str) -> None:
        if self._pre is not None:
            self._pre.append(data)


def read_page(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    return page


def site_pages(site: Path) -> dict[str, Page]:
    """Every HTML page of a built site by its path inside it (``tutorial/index.html``)."""
    return {path.relative_to(site).as_posix(): read_page(path) for path in sorted(site.rglob("*.html"))}


def target_file(site: Path, page: str, link: str) -> tuple[str | None, str]:
    """(the file inside the site that a link of a page names, or None if it names none; its #fragment)."""
    url = urlsplit(urljoin("/" + page, link))
    path = unquote(url.path).lstrip("/")
    candidates = [path] if path and not path.endswith("/") else []
    candidates += [(path.rstrip("/") + "/index.html").lstrip("/")]
    for candidate in candidates:
        if (site / candidate).is_file():
            return candidate, unquote(url.fragment)
    return None, unquote(url.fragment)


def broken_links(site: Path, pages: dict[str, Page]) -> list[str]:
    problems = []
    for name, page in pages.items():
        if name == "404.html":  # Material's 404 page links from the site's root, wherever it is served
            continue
        for link in page.links:
            if link.startswith(EXTERNAL) or link.startswith("#") and link[1:] in page.ids or link == "#":
                continue
            target, fragment = target_file(site, name, link)
            if target is None:
                problems.append(f"{name}: broken link {link}")
            elif fragment and target.endswith(".html") and fragment not in pages[target].ids:
                problems.append(f"{name}: link {link}: no #{fragment} on {target}")
            elif link in page.downloads and target.endswith(".html"):
                problems.append(f"{name}: download link {link} names a page, not a file")
    return problems


def too_wide_blocks(pages: dict[str, Page]) -> list[str]:
    """Code blocks wider than their column, estimated from their characters."""
    problems = []
    for name, page in pages.items():
        wraps = any(sheet.endswith(STYLESHEET) for sheet in page.stylesheets)
        for text, is_output in page.blocks:
            lines = text.rstrip("\n").split("\n")
            if is_output:  # printed as it is: every line must fit
                width, column = max(len(line) for line in lines), NOTEBOOK_OUTPUT_COLUMN
            elif wraps:  # wrapped at spaces, and inside a word only where it must: nothing is too wide
                continue
            else:
                width, column = max(len(line) for line in lines), CODE_COLUMN
            if width > column:
                first = next(line for line in lines if len(line) == width).strip()
                problems.append(f"{name}: code {width} characters wide (column {column}): {first[:50]}…")
    return problems


MEASURE = """
return Array.from(document.querySelectorAll('.md-content pre')).map(pre => {
  const box = pre.querySelector(':scope > code') || pre;
  return [box.scrollWidth - box.clientWidth, box.scrollWidth, box.textContent.trim().slice(0, 50)];
}).filter(([over]) => over > 1);
"""


def too_wide_in_browser(site: Path, pages: dict[str, Page], chromium: str, chromedriver: str) -> list[str]:
    """Code blocks wider than their column, as headless Chromium lays them out at 1280 px."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,2000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(chromedriver), options=options)
    problems = []
    try:
        for name in pages:
            if name == "404.html" or not pages[name].blocks:
                continue
            driver.get((site / name).resolve().as_uri())
            for over, width, start in driver.execute_script(MEASURE):
                problems.append(f"{name}: code {width} px wide, {over} px more than its column: {start}…")
    finally:
        driver.quit()
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", type=Path, help="the folder mkdocs build wrote (--site-dir)")
    parser.add_argument("--browser", action="store_true", help="measure code widths in headless Chromium")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    parser.add_argument("--chromedriver", default=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    args = parser.parse_args(argv)
    if not (args.site / "index.html").is_file():
        print(f"error: {args.site} holds no built site (no index.html): run mkdocs build first", file=sys.stderr)
        return 2
    pages = site_pages(args.site)
    problems = broken_links(args.site, pages)
    if args.browser:
        problems += too_wide_in_browser(args.site, pages, args.chromium, args.chromedriver)
    else:
        problems += too_wide_blocks(pages)
    for problem in problems:
        print(problem)
    blocks = sum(len(page.blocks) for page in pages.values())
    print(f"{len(pages)} pages, {blocks} code blocks: {len(problems)} problem(s)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
