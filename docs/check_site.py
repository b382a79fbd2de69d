"""Check the built documentation site: every internal link and image resolves (the notebook page's
too, which ``mkdocs build --strict`` does not check), no code block is wider than its column, and
the site reads offline: no script or stylesheet comes from outside it, and every formula is typeset.

    python docs/check_site.py SITE_DIR             # links, code widths by character count, math served
    python docs/check_site.py SITE_DIR --browser   # the same, measured in headless Chromium at 1280 px

Prints one line per problem and exits 1 if there is any. Without ``--browser`` a block's width is
estimated from its characters: the site's stylesheet (docs/stylesheets/extra.css) wraps the lines
of Markdown code blocks, so only a notebook output (printed as it is, in columns) or a page without
that stylesheet can be too wide; ``--browser`` measures every block as a reader's browser lays it out.

Formulas ($…$, \\(…\\)) are typeset in the reader's browser by KaTeX (docs/javascripts/katex/);
without ``--browser`` a page with math must load KaTeX and its render call from the site itself;
``--browser`` opens every page with the network cut off and finds the formulas left as raw TeX.

It also holds the figures that README.md, the pages and the notebooks quote against the record of
measured results, docs/results.yaml (docs/quoted_figures.py): a quote that differs from its
record, a number of a drifting kind that the record lacks, or a layer or head counted from 0 is a
problem. Those read the Markdown sources beside this script, not the built site.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
import quoted_figures  # noqa: E402
import site_pictures  # noqa: E402

STYLESHEET = "stylesheets/extra.css"
SOURCES = Path(__file__).resolve().parents[1]  # the repository whose pages quote figures: README.md, docs/
# Characters of code that fit one column in a 1280 px window, measured in Chromium: a Markdown block
# holds 637 px of text (688 less its padding and the copy button's), 8.18 px a character; a notebook
# output 579 px, 7.83 px a character
CODE_COLUMN = 77
NOTEBOOK_OUTPUT_COLUMN = 73
EXTERNAL = ("http:", "https:", "mailto:", "data:", "javascript:", "tel:")
# What a page loads from its address, as the browser fetches it: a link, by contrast, is followed only when clicked
LOADS_FROM = ("http:", "https:", "//")
LOADED_LINKS = {"stylesheet", "preload", "modulepreload", "preconnect", "prefetch", "icon"}
# The renderer the site serves (mkdocs.yml's extra_javascript), and the script that runs it on a page
MATH_SCRIPTS = (
    "javascripts/katex/katex.min.js",
    "javascripts/katex/contrib/auto-render.min.js",
    "javascripts/katex.js",
)
# TeX as the pages write it and KaTeX's auto-render finds it (docs/javascripts/katex.js's delimiters);
# a $ that opens or closes on a space is a price, not math
RAW_TEX = re.compile(r"\$\$.+?\$\$|\$[^\s$](?:[^$\n]*[^\s$])?\$|\\\(.+?\\\)|\\\[.+?\\\]", re.S)
NOT_TEXT = {"pre", "code", "script", "style", "textarea"}  # KaTeX leaves these alone, and so does the count


class Page(HTMLParser):
    """What one built page holds: its anchors, its links, its stylesheets, its scripts, the outside
    addresses it loads from, its formulas (raw TeX in its text) and its code blocks (text, and
    whether it is a notebook's printed output)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.downloads: list[str] = []  # links with a download attribute: a file, never a page
        self.stylesheets: list[str] = []
        self.scripts: list[str] = []
        self.loads_from_outside: list[str] = []
        self.formulas: list[str] = []
        self._text: list[str] = []  # the text outside code, where formulas are
        self._not_text = 0  # how many elements KaTeX leaves alone are open
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
        if tag == "script" and attr.get("src"):
            self.scripts.append(attr["src"])
        loaded = attr.get("src") if tag in ("script", "img", "iframe") else None
        if tag == "link" and LOADED_LINKS & set((attr.get("rel") or "").split()):
            loaded = attr.get("href")
        if loaded and loaded.startswith(LOADS_FROM):
            self.loads_from_outside.append(loaded)
        if tag in NOT_TEXT:
            self._not_text += 1
        if tag in ("br", "img", "link", "meta", "input", "hr", "source", "wbr"):
            return
        self._open.append((tag, "jp-OutputArea-output" in (attr.get("class") or "").split()))
        if tag == "pre" and self._pre is None:
            self._pre, self._pre_is_output = [], any(output for _, output in self._open)

    def handle_endtag(self, tag: str) -> None:
        if tag in NOT_TEXT and self._not_text:
            self._not_text -= 1
        if tag == "pre" and self._pre is not None:
            self.blocks.append(("".join(self._pre), self._pre_is_output))
            self._pre = None
        while self._open:
            if self._open.pop()[0] == tag:
                break

    def handle_data(self, data: str) -> None:
        if self._pre is not None:
            self._pre.append(data)
        if not self._not_text:
            self._text.append(data)

    def close(self) -> None:
        super().close()
        # Markdown can split a formula over elements ($a_i$ with an emphasis inside): join the text first
        self.formulas = RAW_TEX.findall("".join(self._text))


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


def outside_loads(pages: dict[str, Page]) -> list[str]:
    """Scripts, stylesheets, fonts and pictures a page fetches from outside the site: offline they never come."""
    return [
        f"{name}: loads {url} from outside the site: offline it never comes"
        for name, page in pages.items()
        for url in page.loads_from_outside
    ]


def math_not_served(site: Path, pages: dict[str, Page]) -> list[str]:
    """Pages with formulas that do not load KaTeX and its render call from the site: their math stays raw TeX."""
    problems = []
    for name, page in pages.items():
        if not page.formulas:
            continue
        served = {target_file(site, name, src)[0] for src in page.scripts if not src.startswith(LOADS_FROM)}
        missing = [script for script in MATH_SCRIPTS if script not in served]
        if missing:
            problems.append(
                f"{name}: {len(page.formulas)} formula(s) such as {page.formulas[0][:40]} but no "
                f"{', '.join(missing)} served with the site: they show as raw TeX"
            )
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


# After KaTeX has run: the TeX left in the page's text (outside code and typeset math), the formulas
# KaTeX could not parse, and its fonts that failed to load (each set in its fallback, unreadable)
MATH = """
const done = arguments[arguments.length - 1];
document.fonts.ready.then(() => {
  const text = document.body.cloneNode(true);  // the table of contents too: headings hold math
  text.querySelectorAll('pre, code, script, style, textarea, .katex').forEach(node => node.remove());
  const raw = (text.textContent.match(new RegExp(arguments[0], 'gs')) || []).map(tex => tex.slice(0, 40));
  const errors = Array.from(document.querySelectorAll('.katex-error')).map(node => node.textContent.slice(0, 40));
  const fonts = Array.from(document.fonts).filter(font => font.status === 'error').map(font => font.family);
  done([raw, errors, fonts, document.querySelectorAll('.katex').length]);
});
"""
# No name resolves: the browser reads the site as a reader with no network would
OFFLINE = "--host-resolver-rules=MAP * ~NOTFOUND"


def open_browser(chromium: str, chromedriver: str, width: int = 1280, height: int = 2000):
    """Headless Chromium with the network cut off, its window ``width`` by ``height`` px."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", f"--window-size={width},{height}", OFFLINE):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(chromedriver), options=options)


def check_in_browser(
    site: Path, pages: dict[str, Page], chromium: str, chromedriver: str
) -> tuple[list[str], list[str]]:
    """(problems, pictures that record no text size): code blocks, pictures and tables wider than
    their column and labels too small to read, as headless Chromium lays them out at 1280 px, and
    formulas left as raw TeX once the page has loaded with no network."""
    driver = open_browser(chromium, chromedriver)
    problems, unmeasured = [], []
    try:
        for name, page in pages.items():
            if name == "404.html":
                continue
            driver.get((site / name).resolve().as_uri())
            found, unseen = site_pictures.measured_problems(name, *driver.execute_script(site_pictures.MEASURE))
            problems += found
            unmeasured += unseen
            for over, width, start in driver.execute_script(MEASURE):
                problems.append(f"{name}: code {width} px wide, {over} px more than its column: {start}…")
            if not page.formulas:
                continue
            raw, errors, fonts, typeset = driver.execute_async_script(MATH, RAW_TEX.pattern)
            problems += [f"{name}: formula left as raw TeX: {tex}" for tex in raw]
            problems += [f"{name}: KaTeX could not typeset: {tex}" for tex in errors]
            problems += [f"{name}: math font {family} did not load" for family in sorted(set(fonts))]
            if typeset < len(page.formulas) - len(raw) - len(errors):
                problems.append(f"{name}: {typeset} formula(s) typeset of {len(page.formulas)}")
    finally:
        driver.quit()
    return problems, unmeasured


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", type=Path, help="the folder mkdocs build wrote (--site-dir)")
    parser.add_argument(
        "--browser", action="store_true", help="measure code widths and typeset math in headless Chromium, offline"
    )
    parser.add_argument(
        "--list-unmeasured", action="store_true", help="with --browser: name the pictures that record no text size"
    )
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    parser.add_argument("--chromedriver", default=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    args = parser.parse_args(argv)
    if not (args.site / "index.html").is_file():
        print(f"error: {args.site} holds no built site (no index.html): run mkdocs build first", file=sys.stderr)
        return 2
    pages = site_pages(args.site)
    problems = broken_links(args.site, pages) + outside_loads(pages) + math_not_served(args.site, pages)
    html = {name: (args.site / name).read_text(encoding="utf-8") for name in pages}
    problems += site_pictures.unlinked_pictures(args.site, html)
    differing, waiting = quoted_figures.problems(SOURCES)
    problems += differing
    unmeasured: list[str] = []
    if args.browser:
        found, unmeasured = check_in_browser(args.site, pages, args.chromium, args.chromedriver)
        problems += found
    else:
        problems += too_wide_blocks(pages)
    for problem in problems:
        print(problem)
    for problem in waiting:
        print(f"waiting for its owner: {problem}", file=sys.stderr)
    blocks = sum(len(page.blocks) for page in pages.values())
    formulas = sum(len(page.formulas) for page in pages.values())
    if args.list_unmeasured:
        for picture in unmeasured:
            print(f"unmeasured: {picture}", file=sys.stderr)
    measured = f", {len(unmeasured)} picture(s) that record no text size" if args.browser else ""
    print(
        f"{len(pages)} pages, {blocks} code blocks, {formulas} formulas{measured}: {len(problems)} problem(s)",
        file=sys.stderr,
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
