"""The site check's picture and table rules (docs/site_pictures.py) and the hook that links each
picture to its full size (docs/hooks.py), on small pages and pictures made here."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from helpers import REPO
from PIL import Image, PngImagePlugin

sys.path.insert(0, str(REPO / "docs"))

import hooks  # noqa: E402
import site_pictures  # noqa: E402

from minitrans.core.pictures import TEXT_PX_KEY  # noqa: E402


def picture(path: Path, width: int, text_px: float | None) -> Path:
    info = PngImagePlugin.PngInfo()
    if text_px is not None:
        info.add_text(TEXT_PX_KEY, str(text_px))
    Image.new("RGB", (width, width // 2), "white").save(path, pnginfo=info)
    return path


def test_a_picture_outside_a_link_to_itself_is_found():
    pages = {
        "a/index.html": (
            "<p><a href='../big.png'><img src='../big.png'></a></p>"  # linked to itself: fine
            "<p><a href='../other/'><img src='../pic.png'></a></p>"  # linked elsewhere
            "<p><img src='../bare.png'></p><img src='data:image/png;base64,AAAA'>"
        )
    }
    assert site_pictures.unlinked_pictures(Path("."), pages) == [
        "a/index.html: picture ../pic.png is not linked to its full size",
        "a/index.html: picture ../bare.png is not linked to its full size",
    ]


def test_the_hook_links_a_bare_picture_to_its_file_and_leaves_linked_and_inline_ones():
    html = (
        '<p><img alt="a" src="../a.png" /></p>'
        '<a href="../b.png"><img src="../b.png" /></a>'
        '<img src="data:image/png;base64,AAAA" />'
    )
    out = hooks.linked_pictures(html)
    assert '<a href="../a.png" title="full size"><img alt="a" src="../a.png" /></a>' in out
    assert out.count("<a ") == 2  # the linked picture keeps its one link; the inline one gets none
    assert site_pictures.unlinked_pictures(Path("."), {"p/index.html": out}) == []


def test_labels_under_nine_px_at_page_width_are_found(tmp_path):
    small = picture(tmp_path / "small.png", 1000, 20.0)  # 20 px labels shown at 300 of 1000 px: 6 px
    fine = picture(tmp_path / "fine.png", 1000, 20.0)
    pictures = [[small.as_uri(), 1000, 300, 688], [fine.as_uri(), 1000, 600, 688]]  # 6 px, 12 px
    problems, unmeasured = site_pictures.measured_problems("p.html", pictures, [[700, 720, "x"], [900, 720, "wide"]])
    assert problems == [
        "p.html: picture small.png: its smallest text is 6.0 px at page width (under 9)",
        "p.html: table 900 px wide, 180 px more than its column: wide…",
    ]
    assert unmeasured == []


def test_a_picture_that_records_no_text_size_is_counted_as_unmeasured(tmp_path):
    bare = picture(tmp_path / "bare.png", 400, None)
    pictures = [[bare.as_uri(), 400, 400, 688], ["data:image/png;base64,AAAA", 10, 10, 688]]
    problems, unmeasured = site_pictures.measured_problems("p.html", pictures, [])
    assert problems == [] and unmeasured == ["p.html: bare.png"]


def test_a_picture_wider_than_its_column_is_found(tmp_path):
    wide = picture(tmp_path / "wide.png", 1000, 30.0)
    problems, _ = site_pictures.measured_problems("p.html", [[wide.as_uri(), 1000, 900, 688]], [])
    assert problems == ["p.html: picture wide.png is 900 px wide, its column 688 px"]


@pytest.mark.slow
def test_in_a_browser_a_shrunk_picture_and_a_wide_table_are_found(tmp_path):
    pytest.importorskip("selenium", reason="the browser check needs selenium")
    browser, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (browser and driver):
        pytest.skip("the browser check needs chromium and chromedriver (apt-get install chromium chromium-driver)")
    import check_site

    site = tmp_path / "site"
    (site / "p").mkdir(parents=True)
    (site / "index.html").write_text("<html><body><article>home</article></body></html>", encoding="utf-8")
    picture(site / "shrunk.png", 2000, 20.0)
    cells = "".join(f"<td>{'x' * 60}{i}</td>" for i in range(3))
    (site / "p" / "index.html").write_text(
        "<html><body><article style='width: 600px'>"
        "<a href='../shrunk.png'><img src='../shrunk.png' style='max-width: 100%'></a>"
        f"<div style='overflow: auto'><table style='white-space: nowrap'><tr>{cells}</tr></table></div>"
        "</article></body></html>",
        encoding="utf-8",
    )
    problems, unmeasured = check_site.check_in_browser(site, check_site.site_pages(site), browser, driver)
    assert unmeasured == []
    assert any("shrunk.png: its smallest text is 6.0 px" in problem for problem in problems), problems
    assert any("p/index.html: table" in problem for problem in problems), problems
