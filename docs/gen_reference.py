"""The generated parts of the documentation, computed from the code at build time so that they
cannot drift from it: the configuration reference (from the schemas, through the function behind
``train.py --help``), the command-line reference (from each script's own argparse parser) and the
package layout (from each sub-package's and module's docstring).

``docs/hooks.py`` puts them into the pages where a marker such as ``<!-- generated: cli -->``
stands; ``tests/docs/test_docs.py`` uses the same functions to check the references and the shell
commands of the pages.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import io
import re
import runpy
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Entry points that are not files under scripts/ but are documented as commands.
EXTRA_COMMANDS = {
    "python -m minitrans.bench.decoding": "minitrans.bench.decoding",
    "python -m minitrans.bench.speed_measures": "minitrans.bench.speed_measures",
}
# Scripts whose command line is not argparse: train.py takes Hydra overrides (the configuration
# reference lists them); screenshots.py is a development aid documented on the TensorBoard page.
HYDRA_SCRIPTS = {"train.py"}
# The layers from the bottom up (tests/project/test_layers.py enforces the order): the layout page's order.
LAYERS = ["core", "data", "models", "inference", "export", "analysis", "runs", "training", "serve", "bench", "cli"]


class _Captured(Exception):
    def __init__(self, parser: argparse.ArgumentParser):
        super().__init__(parser.prog)
        self.parser = parser


@contextlib.contextmanager
def _capturing_parsers() -> Iterator[None]:
    """While active, the first ``parse_args`` / ``parse_known_args`` call raises ``_Captured``
    carrying the parser instead of parsing: a script's ``main`` builds its parser and hands it
    over before doing anything else."""

    def capture(self, *args, **kwargs):
        raise _Captured(self)

    saved = argparse.ArgumentParser.parse_known_args, argparse.ArgumentParser.parse_args
    argparse.ArgumentParser.parse_known_args = capture
    argparse.ArgumentParser.parse_args = capture
    try:
        yield
    finally:
        argparse.ArgumentParser.parse_known_args, argparse.ArgumentParser.parse_args = saved


def script_parser(script: str) -> argparse.ArgumentParser:
    """The argparse parser of ``scripts/NAME.py``, of another ``.py`` file of the repository, or
    of a module run with ``python -m`` (a key of ``EXTRA_COMMANDS`` or a dotted module name),
    obtained by running it as ``__main__`` with no arguments until it asks argparse to parse."""
    module = EXTRA_COMMANDS.get(script, script.removeprefix("python -m ") if script.startswith("python -m ") else None)
    path = None if module else (ROOT / script if "/" in script else ROOT / "scripts" / script)
    saved_argv = sys.argv
    sys.argv = [str(path or module)]
    try:
        with _capturing_parsers(), contextlib.redirect_stdout(io.StringIO()):
            if module:
                runpy.run_module(module, run_name="__main__", alter_sys=False)
            else:
                runpy.run_path(str(path), run_name="__main__")
    except _Captured as captured:
        return captured.parser
    finally:
        sys.argv = saved_argv
    raise LookupError(f"{script} never asked argparse to parse its command line")


def argparse_scripts() -> list[str]:
    """Every documented command with an argparse command line: scripts/*.py but train.py, and
    the ``python -m`` entry points."""
    names = sorted(p.name for p in (ROOT / "scripts").glob("*.py") if p.name not in HYDRA_SCRIPTS)
    return sorted([*names, *EXTRA_COMMANDS], key=_reading_order)


# The reference's order: what a learner runs after training first, the benchmarks last.
FIRST_SCRIPTS = ["translate.py", "evaluate.py", "serve.py", "compare.py", "heads.py", "average.py", "export.py"]


def _reading_order(name: str) -> tuple[int, int, str]:
    if name in FIRST_SCRIPTS:
        return (0, FIRST_SCRIPTS.index(name), name)
    is_benchmark = name.startswith(("bench", "python -m minitrans.bench")) or name == "throughput.py"
    return (2 if is_benchmark else 1, 0, name)


def option_strings(parser: argparse.ArgumentParser) -> set[str]:
    """Every option a user may give (options hidden from ``--help`` left out)."""
    return {
        option for action in parser._actions if action.help != argparse.SUPPRESS for option in action.option_strings
    }


def _help_without_width(parser: argparse.ArgumentParser) -> str:
    previous = parser.formatter_class
    parser.formatter_class = lambda prog: previous(prog, width=76)  # a page's code column
    try:
        return parser.format_help()
    finally:
        parser.formatter_class = previous


def cli_markdown() -> str:
    """One section per command: its usage and every option, as its own ``--help`` prints it."""
    out = [
        "## train.py",
        "",
        "`python scripts/train.py [group=option ...] [key=value ...]` takes Hydra overrides, not",
        "flags: every key is in the [configuration reference](configuration.md). Hydra's own flags",
        "(`-m` for a sweep, `--cfg job` to print the composed configuration, `--help`,",
        "`--hydra-help`) work as in any Hydra application.",
        "",
    ]
    for name in argparse_scripts():
        command = name if name.startswith("python -m") else f"python scripts/{name}"
        parser = script_parser(name)
        out += [
            f"## {name.removeprefix('python -m ')}",
            "",
            f"`{command}`",
            "",
            "```text",
            _help_without_width(parser).rstrip(),
            "```",
            "",
        ]
    return "\n".join(out)


def config_schemas() -> list[tuple[str, type]]:
    """(key prefix, schema) for every section of the configuration, as ``--help`` groups them."""
    from minitrans.core.config import CleanConfig, DataConfig, RNNConfig, TrainConfig, TrainerConfig, TransformerConfig

    return [
        ("model.", TransformerConfig),
        ("model.", RNNConfig),
        ("data.", DataConfig),
        ("data.clean.", CleanConfig),
        ("trainer.", TrainerConfig),
        ("", TrainConfig),
    ]


def config_keys() -> set[str]:
    """Every leaf key a command line may set (nested schemas are walked, not listed)."""
    keys = set()
    for prefix, schema in config_schemas():
        for field in dataclasses.fields(schema):
            if not _is_nested(field):
                keys.add(prefix + field.name)
    return keys


def _is_nested(field: dataclasses.Field) -> bool:
    """A field holding another schema (``data.clean``, ``model``): its keys are listed there."""
    if field.name in ("model", "data", "trainer"):
        return True
    return field.default_factory is not dataclasses.MISSING and dataclasses.is_dataclass(field.default_factory())


def _default(field: dataclasses.Field) -> str:
    if field.default is not dataclasses.MISSING:
        return repr(field.default)
    if field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
        return repr(value)
    return "(required)"


def config_markdown() -> str:
    """The groups, then every key: ``train.py --help``'s own text (from the schemas), then each
    schema's fields with their type and default."""
    from minitrans.core.config_help import help_text

    groups = []
    for group in sorted(p for p in (ROOT / "conf").iterdir() if p.is_dir() and p.name != "hydra"):
        options = sorted(p.stem for p in group.glob("*.yaml"))
        groups.append(f"| `{group.name}` | {', '.join(f'`{o}`' for o in options)} |")
    out = [
        "## Groups",
        "",
        "Pick one option of a group with `group=option` (`model=rnn`, `experiment=multi30k`).",
        "",
        "| group | options |",
        "|---|---|",
        *groups,
        "",
        "## Every key",
        "",
        "What `python scripts/train.py --help` prints, taken from the schemas in `minitrans/core/config.py`,",
        "one table per section:",
        "",
        *_help_tables(help_text()),
        "## Types and defaults",
        "",
        "The defaults of the schemas; a group option (`model=rnn`, `data=multi30k`) or an experiment",
        "may change them (`python scripts/train.py --cfg job` prints the composed values).",
        "",
    ]
    for prefix, schema in config_schemas():
        out += [f"### {schema.__name__}", "", "| key | type | default |", "|---|---|---|"]
        for field in dataclasses.fields(schema):
            if _is_nested(field):
                continue
            kind = field.type if isinstance(field.type, str) else getattr(field.type, "__name__", str(field.type))
            cells = [f"`{prefix}{field.name}`", f"`{kind}`", f"`{_default(field)}`"]
            out.append("| " + " | ".join(cells) + " |")  # a | inside a code span is no cell border
        out.append("")
    return "\n".join(out)


def _help_tables(text: str) -> list[str]:
    """``--help``'s sections (``model=transformer (the default):`` then ``  key=default  what it is``
    lines) as Markdown tables, which fit the page where the text's 200-character lines did not."""
    out: list[str] = []
    for line in text.rstrip().splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            out += ["", f"**{line.rstrip(':')}**", "", "| key=default | what it is |", "|---|---|"]
            continue
        setting = re.match(r"^\s+(\S+?)=(.*?)\s{2,}(\S.*)$", line) or re.match(r"^\s+(\S+?)=(\S*)\s(.*)$", line)
        key, default, what = setting.groups()
        what = re.sub(r"(?<!\\)\|", "\\|", what)
        out.append(f"| `{key}={default}` | {what} |")
    return [*out, ""]


def _markdown(rst: str) -> str:
    """Docstring markup as Markdown: ``code`` and :role:`~a.b.name` become `code` and `name`."""
    text = re.sub(
        r":\w+:`~?([\w.]+)`",
        lambda m: "`" + (m.group(1).rsplit(".", 1)[-1] if "~" in m.group(0) else m.group(1)) + "`",
        rst,
    )
    return text.replace("``", "`")


def _first_docstring_line(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    paragraph = doc.split("\n\n")[0]
    return _markdown(" ".join(paragraph.split()))


def layout_markdown() -> str:
    """Each sub-package with its docstring, and each of its modules with its docstring's first
    paragraph."""
    out = []
    found = {p.name: p for p in (ROOT / "minitrans").iterdir() if p.is_dir() and any(p.glob("*.py"))}
    packages = [
        found[name] for name in sorted(found, key=lambda n: (LAYERS.index(n) if n in LAYERS else len(LAYERS), n))
    ]
    for package in packages:
        init = package / "__init__.py"
        doc = (ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) if init.exists() else None) or ""
        out += [f"## minitrans.{package.name}", "", _markdown(doc.strip()) or "(no package docstring yet)", ""]
        out += ["| module | what it holds |", "|---|---|"]
        for module in sorted(package.glob("*.py")):
            if module.name == "__init__.py":
                continue
            summary = _first_docstring_line(module).replace("|", "\\|")
            out.append(f"| `{package.name}/{module.name}` | {summary} |")
        out.append("")
    return "\n".join(out)


GENERATORS = {"cli": cli_markdown, "configuration": config_markdown, "layout": layout_markdown}


def expand(markdown: str) -> str:
    """The page with each ``<!-- generated: NAME -->`` marker replaced by what NAME generates."""
    for name, generate in GENERATORS.items():
        marker = f"<!-- generated: {name} -->"
        if marker in markdown:
            markdown = markdown.replace(marker, generate())
    return markdown
