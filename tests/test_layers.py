"""The package's folders are its layers: each sub-package imports only those below it, so a
newcomer can tell from ``ls minitrans/`` where a change belongs and what it may touch."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "minitrans"
# bottom to top; a sub-package may import its own modules and any sub-package of a lower rank
LAYERS = {"core": 0, "data": 1, "models": 2, "inference": 3, "runs": 4, "training": 5, "serve": 6, "bench": 6}
MAX_LINES = 400
TABLES = {"data/lexicon.py"}  # the grammar's word lists: data, not logic


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def imported(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every ``minitrans.*`` import in the file, at any depth (lazy ones too)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("minitrans"):
            names = [node.module] if node.module != "minitrans" else [f"minitrans.{a.name}" for a in node.names]
            found += [(node.lineno, name) for name in names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("minitrans")]
    return found


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def test_every_module_sits_in_a_layer():
    loose = [p.relative_to(PACKAGE).as_posix() for p in modules() if p.parent == PACKAGE and p.name != "__init__.py"]
    assert loose == [], f"modules outside the layer sub-packages: {loose}"
    assert {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"} == set(LAYERS)


@pytest.mark.parametrize("path", modules(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_no_module_imports_a_layer_above_its_own(path: Path):
    own = path.relative_to(PACKAGE).parts[0]
    if own not in LAYERS:
        return
    upward = [
        f"line {line}: {module}"
        for line, module in imported(path)
        if (other := layer_of(module)) is not None and other != own and LAYERS[other] >= LAYERS[own]
    ]
    assert upward == [], f"{path.relative_to(PACKAGE)} imports from its own layer or above: {upward}"


def test_sub_packages_say_what_belongs_in_them_and_import_nothing():
    for name in LAYERS:
        init = PACKAGE / name / "__init__.py"
        tree = ast.parse(init.read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), f"{name}/__init__.py has no docstring"
        assert "import" in ast.get_docstring(tree), f"{name}/__init__.py does not say what may import it"
        assert not [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)], f"{name} imports eagerly"


def test_no_module_is_longer_than_one_sitting():
    long = {
        p.relative_to(PACKAGE).as_posix(): n
        for p in modules()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
        and p.relative_to(PACKAGE).as_posix() not in TABLES
    }
    assert long == {}, f"modules over {MAX_LINES} lines: {long}"
