"""The check over the built site (docs/check_site.py) and the hook that points the notebook's links
at the site's pages (docs/hooks.py): each finds what it must, on small pages made here."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs"))

import check_site  # noqa: E402

STYLE = '<link rel="stylesheet" href="../stylesheets/extra.css">'


def write_site(root: Path, pages: dict[str, str]) -> Path:
    for name, body in {"index.html": "<h1 id='top'>home</h1>", **pages}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(
            f"<!doctype html><html><head>{STYLE}</head><body>{body}</body></html>", encoding="utf-8"
        )
    return root


def test_a_broken_link_and_a_missing_anchor_are_found_and_good_links_pass(tmp_path):
    site = write_site(
        tmp_path,
        {
            "concepts/index.html": "<h2 id='why-d_k'>d_k</h2><img src='../pic.png' alt='x'>",
            "tutorial/notebook/index.html": (
                "<a href='../../concepts/#why-d_k'>ok</a> <a href='../../concepts/#nowhere'>no anchor</a>"
                " <a href='../concepts.md#why-d_k'>a file name</a> <a href='https://example.org/x'>out</a>"
                " <a href='#here'>here</a><span id='here'></span> <a href='notebook.ipynb'>download</a>"
            ),
        },
    )
    problems = check_site.broken_links(site, check_site.site_pages(site))
    assert problems == [
        "concepts/index.html: broken link ../pic.png",
        "tutorial/notebook/index.html: link ../../concepts/#nowhere: no #nowhere on concepts/index.html",
        "tutorial/notebook/index.html: broken link ../concepts.md#why-d_k",
        "tutorial/notebook/index.html: broken link notebook.ipynb",
    ]
    (site / "pic.png").write_bytes(b"")
    (site / "tutorial" / "notebook" / "notebook.ipynb").write_text("{}")
    assert check_site.broken_links(site, check_site.site_pages(site)) == problems[1:3]


def test_a_download_link_must_name_a_file_not_a_page(tmp_path):
    site = write_site(
        tmp_path, {"nb/index.html": "<a href='./' download>get it</a> <a href='nb.ipynb' download>ok</a>"}
    )
    (site / "nb" / "nb.ipynb").write_text("{}")
    assert check_site.broken_links(site, check_site.site_pages(site)) == [
        "nb/index.html: download link ./ names a page, not a file"
    ]


def test_a_notebook_output_wider_than_its_column_is_found_and_wrapped_code_is_not(tmp_path):
    wide = "x " * 60
    output = f"<div class='jp-OutputArea-output'><pre>{'y' * (check_site.NOTEBOOK_OUTPUT_COLUMN + 1)}</pre></div>"
    site = write_site(tmp_path, {"a/index.html": f"<pre><code>{wide}</code></pre>{output}"})
    (site / "b").mkdir()
    (site / "b" / "index.html").write_text(f"<pre><code>{'z' * 100}</code></pre>", encoding="utf-8")
    problems = check_site.too_wide_blocks(check_site.site_pages(site))
    assert [problem.split(":")[0] for problem in problems] == ["a/index.html", "b/index.html"]
    assert "column 73" in problems[0] and "column 77" in problems[1]  # b/ has no wrapping stylesheet


def test_the_check_exits_1_on_a_problem_and_0_on_none(tmp_path, capsys):
    assert check_site.main([str(write_site(tmp_path / "good", {}))]) == 0
    assert check_site.main([str(write_site(tmp_path / "bad", {"x/index.html": "<a href='../y/'>y</a>"}))]) == 1
    assert "x/index.html: broken link ../y/" in capsys.readouterr().out
    assert check_site.main([str(tmp_path / "nothing")]) == 2


def test_the_site_wraps_code_with_the_stylesheet_the_check_expects():
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert re.search(r"extra_css:\s*\n\s*- " + re.escape(check_site.STYLESHEET), config)
    css = (ROOT / "docs" / check_site.STYLESHEET).read_text(encoding="utf-8")
    rule = css.split(".md-typeset pre > code", 1)[1].split("}", 1)[0]
    assert "white-space: pre-wrap" in rule and "overflow-wrap: anywhere" in rule


def test_the_notebook_links_become_the_site_addresses_of_its_pages(caplog):
    pytest.importorskip("mkdocs", reason='the site is built with the docs extra: pip install -e ".[docs]"')
    import hooks
    from mkdocs.structure.files import File, Files

    def page(path, dest):
        return File(path, "docs", "site", True, dest_uri=dest)

    notebook = page("tutorial/attention_tour.ipynb", "tutorial/attention_tour/index.html")
    files = Files([notebook, page("concepts.md", "concepts/index.html"), page("results.md", "results/index.html")])
    html = (
        '<a href="../concepts.md#why-d_k">a</a> <a href="../results.md">b</a> <a href="https://x.org/a.md">c</a>'
        ' <a href="../nowhere.md">d</a>'
    )
    out = hooks.on_page_content(html, page=SimpleNamespace(file=notebook), files=files)
    assert 'href="../../concepts/#why-d_k"' in out and 'href="../../results/"' in out
    assert 'href="https://x.org/a.md"' in out and 'href="../nowhere.md"' in out
    own = hooks.on_page_content(
        '<a href="attention_tour.ipynb" download>', page=SimpleNamespace(file=notebook), files=files
    )
    assert own == '<a href="attention_tour.ipynb" download>'  # the copy mkdocs-jupyter puts beside the page
    assert "nowhere.md, which is not a page" in caplog.text
    markdown_page = SimpleNamespace(file=page("concepts.md", "concepts/index.html"))
    assert hooks.on_page_content(html, page=markdown_page, files=files) == html  # mkdocs checks its own


def test_the_notebook_pictures_become_the_site_addresses_of_their_files(caplog):
    pytest.importorskip("mkdocs", reason='the site is built with the docs extra: pip install -e ".[docs]"')
    import hooks
    from mkdocs.structure.files import File, Files

    notebook = File(
        "tutorial/attention_tour.ipynb", "docs", "site", True, dest_uri="tutorial/attention_tour/index.html"
    )
    files = Files([notebook, File("diagrams/masks.png", "docs", "site", True)])
    html = '<img alt="m" src="../diagrams/masks.png"/> <img src="../diagrams/gone.png"/> <img src="data:x"/>'
    out = hooks.on_page_content(html, page=SimpleNamespace(file=notebook), files=files)
    assert (
        '<a href="../../diagrams/masks.png" title="full size"><img alt="m" src="../../diagrams/masks.png"/></a>' in out
    )
    assert 'src="../diagrams/gone.png"' in out and "gone.png, which is not a file of the site" in caplog.text
    assert '<img src="data:x"/>' in out  # a picture inside the page stays, unlinked


def test_the_api_pages_docstrings_lose_their_sphinx_roles_and_keep_their_lists():
    pytest.importorskip("griffe", reason='the site is built with the docs extra: pip install -e ".[docs]"')
    import griffe_docstrings

    text = "Uses :func:`~minitrans.models.attention.make_causal_mask` and :mod:`minitrans.core.textio`:\n- one\n  two\n- three\nafter"
    assert griffe_docstrings.markdown_docstring(text) == (
        "Uses `make_causal_mask` and `minitrans.core.textio`:\n\n- one\n  two\n- three\nafter"
    )
    assert griffe_docstrings.markdown_docstring("a\n\n- b") == "a\n\n- b"
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "extensions: [docs/griffe_docstrings.py]" in config


KATEX = "".join(f"<script src='../{script}'></script>" for script in check_site.MATH_SCRIPTS)


def test_an_outside_script_or_stylesheet_is_found_and_an_outside_link_is_not(tmp_path):
    cdn = "https://cdn.jsdelivr.net/npm/katex@0.16.4/dist"
    site = write_site(
        tmp_path,
        {
            "a/index.html": f"<link rel='stylesheet' href='{cdn}/katex.min.css'><script src='{cdn}/katex.min.js'></script>",
            "b/index.html": "<link rel='preconnect' href='https://fonts.gstatic.com'><img src='//x.org/p.png'>",
            "c/index.html": "<a href='https://example.org/'>a link, followed only when clicked</a>",
        },
    )
    assert check_site.outside_loads(check_site.site_pages(site)) == [
        f"a/index.html: loads {cdn}/katex.min.css from outside the site: offline it never comes",
        f"a/index.html: loads {cdn}/katex.min.js from outside the site: offline it never comes",
        "b/index.html: loads https://fonts.gstatic.com from outside the site: offline it never comes",
        "b/index.html: loads //x.org/p.png from outside the site: offline it never comes",
    ]
    assert check_site.main([str(site)]) == 1


def test_math_on_a_page_that_does_not_serve_katex_is_found_and_a_price_is_not_math(tmp_path):
    site = write_site(
        tmp_path,
        {
            "raw/index.html": "<p>scores over $\\sqrt{d_k}$ and <span class='arithmatex'>\\(QK^\\top\\)</span></p>",
            "served/index.html": f"{KATEX}<p>$\\sqrt{{d_k}}$</p>",
            "half/index.html": "<script src='../javascripts/katex/katex.min.js'></script><p>$x_<em>i</em>$</p>",
            "prose/index.html": "<p>it costs $5 and $6</p><pre><code>echo $HOME$PATH</code></pre>",
        },
    )
    for script in check_site.MATH_SCRIPTS:
        (site / script).parent.mkdir(parents=True, exist_ok=True)
        (site / script).write_text("")
    pages = check_site.site_pages(site)
    assert pages["raw/index.html"].formulas == ["$\\sqrt{d_k}$", "\\(QK^\\top\\)"]
    assert pages["half/index.html"].formulas == ["$x_i$"]  # a formula Markdown split over elements
    assert pages["prose/index.html"].formulas == []
    problems = check_site.math_not_served(site, pages)
    assert [problem.split(":")[0] for problem in problems] == ["half/index.html", "raw/index.html"]
    assert "2 formula(s) such as $\\sqrt{d_k}$" in problems[1] and "show as raw TeX" in problems[1]
    assert "katex.min.js" not in problems[0] and "auto-render.min.js" in problems[0]


def test_the_site_serves_katex_itself_with_its_fonts_and_licence():
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "cdn" not in config.lower() and "http" not in config.split("theme:")[0]
    for script in check_site.MATH_SCRIPTS:
        assert f"- {script}" in config and (ROOT / "docs" / script).is_file()
    katex = ROOT / "docs" / "javascripts" / "katex"
    assert "MIT License" in (katex / "LICENSE").read_text(encoding="utf-8")
    fonts = re.findall(r"url\(([^)]+)\)", (katex / "katex.min.css").read_text(encoding="utf-8"))
    assert fonts and all((katex / font).is_file() for font in fonts)  # every font the stylesheet names


def chromium() -> tuple[str, str]:
    pytest.importorskip("selenium", reason="the browser check needs selenium")
    paths = shutil.which("chromium"), shutil.which("chromedriver")
    if not all(paths):
        pytest.skip("the browser check needs chromium and chromedriver (apt-get install chromium chromium-driver)")
    return paths


@pytest.mark.slow
def test_in_a_browser_with_no_network_katex_typesets_the_math_and_raw_tex_is_found(tmp_path):
    browser, driver = chromium()
    site = tmp_path / "site"
    shutil.copytree(ROOT / "docs" / "javascripts", site / "javascripts")  # as mkdocs copies it
    served = "<link rel='stylesheet' href='../javascripts/katex/katex.min.css'>" + KATEX.replace(
        "javascripts/katex.js'></script>", "render.js'></script>"
    )
    (site / "render.js").write_text(
        "renderMathInElement(document.body, {throwOnError: false});"
    )  # katex.js sans Material
    body = (
        "<div class='md-content'><p><span class='arithmatex'>\\(\\sqrt{d_k}\\)</span> and \\(\\frac{1}{2}\\)</p></div>"
    )
    cdn = "<script src='https://cdn.jsdelivr.net/npm/katex@0.16.4/dist/katex.min.js'></script>"
    write_site(site, {"good/index.html": body + served, "raw/index.html": body + cdn})
    problems, unmeasured = check_site.check_in_browser(site, check_site.site_pages(site), browser, driver)
    assert unmeasured == []
    assert problems == [
        "raw/index.html: formula left as raw TeX: \\(\\sqrt{d_k}\\)",
        "raw/index.html: formula left as raw TeX: \\(\\frac{1}{2}\\)",
    ]
