"""The commands the README and the documentation pages give, as a reader would copy them: the
lines of shell blocks (``$ `` lines of other blocks, continuation lines joined) and the inline
``python scripts/…`` spans of the prose, each cut into the repository's Python files it runs and
their arguments. tests/docs/test_docs.py checks that each parses; tests/docs/test_doc_commands.py runs them."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
if str(DOCS) not in sys.path:
    sys.path.insert(0, str(DOCS))

import gen_reference  # noqa: E402

PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
SHELL_LANGUAGES = {"bash", "sh", "shell", "console"}
PYTHON_M = {name.removeprefix("python -m "): name for name in gen_reference.EXTRA_COMMANDS}


def fenced_blocks(text: str) -> list[tuple[str, list[str]]]:
    """(language, lines) of each fenced block of a Markdown text."""
    blocks, language, lines = [], None, []
    for line in text.split("\n"):
        fence = re.match(r"^\s*```(\w*)", line)
        if fence and language is None:
            language, lines = fence.group(1), []
        elif fence:
            blocks.append((language, lines))
            language = None
        elif language is not None:
            lines.append(line)
    return blocks


def shell_commands(text: str) -> list[tuple[str, bool]]:
    """(command line, expected to fail) for each shell command of the fenced blocks: every line of
    a bash block, and the ``$ `` lines of other blocks; continuation lines joined. A command
    followed by a ``# error:`` line is documented as one that fails."""
    commands: list[tuple[str, bool]] = []
    for language, lines in fenced_blocks(text):
        if language not in SHELL_LANGUAGES and language != "":
            continue
        pending = ""
        for line in lines:
            stripped = line.strip()
            if stripped.startswith("# error:") and commands:
                commands[-1] = (commands[-1][0], True)
                continue
            if language in ("", "console"):
                if not stripped.startswith("$ ") and not pending:
                    continue
                stripped = stripped.removeprefix("$ ")
            if not stripped or (stripped.startswith("#") and not pending):
                continue
            if stripped.endswith("\\"):
                pending += stripped[:-1] + " "
                continue
            commands.append((pending + stripped, False))
            pending = ""
    return commands


def inline_commands(text: str) -> list[str]:
    """The inline code spans of the prose (outside fenced blocks) that run a Python file of the
    repository or a documented ``python -m`` module: ```python scripts/heads.py RUN``` in a
    sentence or a table. Usage sketches are left out: a span with ``[optional]`` parts, or one
    that gives training a placeholder (``OVERRIDES``) in place of its overrides."""
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    found = []
    for span in re.findall(r"`([^`\n]+)`", prose):
        if not re.match(r"(python3?|torchrun)\s", span) or "[" in span:
            continue
        if "scripts/train.py" in span and re.search(r"\s[A-Z_]{4,}(\s|$)", span):
            continue
        found.append(span.replace("...", "").replace("…", "").strip())
    return found


def script_invocations(command: str) -> list[tuple[str, list[str]]]:
    """(script, its arguments) for each part of a shell command line that runs a Python file of
    the repository (``python scripts/x.py``, ``torchrun … scripts/train.py``) or a documented
    ``python -m`` module. Redirections and what follows ``|``, ``&&``, ``;`` end the arguments."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    tokens = list(lexer)
    parts, current = [], []
    for token in tokens:
        if token in ("|", "||", "&&", ";", "&", "(", ")"):
            parts.append(current)
            current = []
        else:
            current.append(token)
    parts.append(current)
    found = []
    for part in parts:
        for index, token in enumerate(part):
            if token == "-m" and index + 1 < len(part) and part[index + 1] in PYTHON_M:
                script, start = PYTHON_M[part[index + 1]], index + 2
            elif token.endswith(".py") and (ROOT / token).is_file() and _after_an_interpreter(part[:index]):
                script, start = token, index + 1
            else:
                continue
            args = []
            rest = iter(part[start:])
            for arg in rest:
                if arg in (">", ">>", "<", "2>", "&>"):
                    next(rest, None)
                    continue
                args.append(arg)
            found.append((script, args))
            break
    return found


def _after_an_interpreter(before: list[str]) -> bool:
    """Whether a file name is run (``python x.py``, ``torchrun … x.py``), not an argument (``pytest x.py``)."""
    return any(Path(token).name.startswith(("python", "torchrun")) for token in before)


def documented_invocations(inline: bool = True) -> list[tuple[str, str, list[str], bool]]:
    """(page, script, arguments, expected to fail) for every script run in the pages' shell
    blocks, and with ``inline`` in their inline spans too."""
    out = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        commands = shell_commands(text) + ([(span, False) for span in inline_commands(text)] if inline else [])
        for command, fails in commands:
            for script, args in script_invocations(command):
                out.append((str(page.relative_to(ROOT)), script, args, fails))
    return out


__all__ = [
    "PAGES",
    "gen_reference",
    "PYTHON_M",
    "documented_invocations",
    "fenced_blocks",
    "inline_commands",
    "script_invocations",
    "shell_commands",
]
