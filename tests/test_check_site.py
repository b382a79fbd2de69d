"""The check over the built site (docs/check_site.py) and the hook that points the notebook's links
at the site's pages (docs/hooks.py): each finds what it must, on small pages made here."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs"))

import check_site  # noqa: E402

STYLE = '<link rel="stylesheet" href="../stylesheets/extra.css">'


def write_site(root: Path, pages: dict[str, str]) -> Path:
    for name, body in {"index.html": "<h1 id='top'>home</h1>", **pages}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"<html><head>{STYLE}</head><body>{body}</body></html>", encoding="utf-8")
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
