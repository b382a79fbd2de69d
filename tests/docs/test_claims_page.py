"""docs/claims.md teaches: a one-line-a-claim summary at the top linking each claim's section,
and every section with the claim, why it should hold, a command to measure it and a verdict;
the figures it quotes from scaling_at_init agree with the record the script wrote."""

from __future__ import annotations

import json
import re

import pytest
from helpers import REPO
from markdown.extensions.toc import slugify

DOCS = REPO / "docs"
PAGE = (DOCS / "claims.md").read_text(encoding="utf-8")


def sections(text: str, level: str = "## ") -> dict[str, str]:
    """Heading -> body, for every heading of ``level`` (outside fenced blocks)."""
    found, heading, body, is_code = {}, None, [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            is_code = not is_code
        if not is_code and line.startswith(level):
            if heading is not None:
                found[heading] = "\n".join(body)
            heading, body = line[len(level) :].strip(), []
        elif heading is not None:
            body.append(line)
    if heading is not None:
        found[heading] = "\n".join(body)
    return found


CLAIMS = {heading: body for heading, body in sections(PAGE).items() if heading.startswith("Claim ")}


def summary_rows() -> list[list[str]]:
    """The cells of the first table of the page, header and rule left out."""
    intro = PAGE.split("\n## ", 1)[0]
    rows = [line for line in intro.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


def test_the_summary_table_has_one_short_line_per_claim_linking_its_section():
    rows = summary_rows()
    assert len(rows) == len(CLAIMS) >= 7
    anchors = {slugify(heading, "-"): heading for heading in CLAIMS}
    for number, (claim, verdict, link) in enumerate(rows):
        assert claim.startswith(f"{number}. "), claim
        target = re.fullmatch(r"\[claim \d\]\(#([\w-]+)\)", link)
        assert target and target.group(1) in anchors, link
        assert anchors[target.group(1)].startswith(f"Claim {number}:"), link
        assert len(claim) + len(verdict) < 200, claim  # one line a claim, not a paragraph


def test_no_table_cell_holds_a_command():
    """Commands go in code blocks, where they cannot break mid-word as a narrow cell breaks them."""
    table_lines = [line for line in PAGE.splitlines() if line.startswith("|")]
    assert table_lines
    for line in table_lines:
        assert not re.search(r"`(python|pytest) ", line), line


@pytest.mark.parametrize("heading", list(CLAIMS))
def test_every_claim_section_has_the_claim_why_a_command_and_a_verdict(heading):
    body = CLAIMS[heading]
    assert body.lstrip().startswith("**The claim.**"), heading
    parts = sections(body, "### ")
    assert "Why" in parts and len(parts["Why"].split()) > 30, heading
    assert "Verdict" in parts, heading
    commands = re.findall(r"```bash\n(.*?)```", body, flags=re.S)
    assert any(re.search(r"^(python|pytest) ", block, flags=re.M) for block in commands), heading


def test_the_derivations_a_learner_follows_are_there():
    why = {heading.split(":")[0]: sections(body, "### ")["Why"] for heading, body in CLAIMS.items()}
    assert "Var" in why["Claim 1"] and "d_k" in why["Claim 1"]
    assert r"\mathrm{diag}(p) - p\,p^\top" in why["Claim 1"] and "one-hot" in why["Claim 1"]
    assert r"\mathrm{Attn}(PX) = P" in why["Claim 3"]
    assert "shifted" in why["Claim 2"] and "copy" in why["Claim 2"]


def test_what_is_not_measured_is_said():
    assert "**Not measured:**" in sections(CLAIMS["Claim 4: head roles"], "### ")["Verdict"]
    assert "semantic" in sections(CLAIMS["Claim 4: head roles"], "### ")["Verdict"]


def test_claim_1s_table_at_initialisation_quotes_the_record_over_the_whole_grid():
    record = json.loads((DOCS / "claims" / "scaling_at_init.json").read_text(encoding="utf-8"))
    weight = {
        (r["d_model"], r["num_heads"], r["is_scaled"]): r["max_weight"] for r in record if r["d_model"] is not None
    }
    body = next(body for heading, body in CLAIMS.items() if heading.startswith("Claim 1:"))
    rows = [line for line in body.splitlines() if re.match(r"\| \d+ \| d_k", line)]
    assert {int(row.split("|")[1]) for row in rows} == {64, 128, 256}
    heads = (1, 2, 4, 8)
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        d_model = int(cells[0])
        for num_heads, cell in zip(heads, cells[1:], strict=True):
            d_k, unscaled, scaled = re.fullmatch(r"d_k (\d+): \**([\d.]+)\** / ([\d.]+)", cell).groups()
            assert int(d_k) == d_model // num_heads, cell
            assert float(unscaled) == round(weight[d_model, num_heads, False], 2), cell
            assert float(scaled) == round(weight[d_model, num_heads, True], 2), cell
