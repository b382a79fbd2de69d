"""The package's folders are its layers: each sub-package imports only those below it, so a
newcomer can tell from ``ls minitrans/`` where a change belongs and what it may touch."""

from __future__ import annotations

import ast
import re
from collections import deque
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "minitrans"
TESTS = Path(__file__).resolve().parents[1]
# bottom to top; a sub-package may import its own modules and any sub-package of a lower rank
LAYERS = {
    "core": 0,
    "data": 1,
    "models": 2,
    "inference": 3,
    "export": 4,
    "analysis": 5,
    "runs": 6,
    "training": 7,
    "serve": 8,
    "bench": 8,
    "cli": 9,
}
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


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Each module of the package -> the package's modules it imports, lazy and TYPE_CHECKING
    imports included (``from minitrans.core import config`` names the module ``config``)."""
    paths = {module_name(p): p for p in modules()}
    graph = {}
    for name, path in paths.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("minitrans"):
                candidates = [f"{node.module}.{a.name}" for a in node.names]
                targets |= {c if c in paths else node.module for c in candidates}
            elif isinstance(node, ast.Import):
                targets |= {a.name for a in node.names if a.name.startswith("minitrans")}
        graph[name] = {t for t in targets if t in paths and t != name}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """A shortest cycle through each module that imports itself round about, a module already
    named in a cycle not starting another: ``[a, b, c, a]`` for a -> b -> c -> a."""
    cycles, seen = [], set()
    for start in sorted(graph):
        if start in seen:
            continue
        came_from, queue = {}, deque([start])  # breadth first: the shortest way back to start
        while queue and start not in came_from:
            node = queue.popleft()
            for other in sorted(graph[node]):
                if other not in came_from:
                    came_from[other] = node
                    queue.append(other)
        if start not in came_from:
            continue
        back, node = [], came_from[start]
        while node != start:
            back.append(node)
            node = came_from[node]
        cycle = [start, *reversed(back), start]
        seen |= set(cycle)
        cycles.append(cycle)
    return cycles


def test_import_cycles_are_found():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e2"}, "e2": {"e"}}
    assert import_cycles(graph) == [["a", "b", "c", "a"], ["e", "e2", "e"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle():
    """No module imports, at any depth, a module that imports it back (directly or through
    others): a shared piece moves down to a module both import instead."""
    cycles = [" -> ".join(cycle) for cycle in import_cycles(import_graph())]
    assert cycles == [], "import circles: " + "; ".join(cycles)


def imports_of_test_files(source: str) -> list[tuple[int, str]]:
    """(line, module) for every import of a test file (``test_*``, ``tests.test_*``) in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] if node.module != "tests" else [f"tests.{a.name}" for a in node.names]
        found += [(node.lineno, name) for name in names if name.removeprefix("tests.").startswith("test_")]
    return found


def test_test_file_imports_are_found():
    source = "import test_a\nfrom test_b import x\nfrom tests.test_c import y\nfrom tests import test_d\n"
    source += "def f():\n    from test_e import z\nfrom helpers.checkpoints import SRC\nimport testing\n"
    assert [name for _, name in imports_of_test_files(source)] == [
        "test_a",
        "test_b",
        "tests.test_c",
        "tests.test_d",
        "test_e",
    ]


def test_no_test_file_imports_another():
    """Tests share helpers through conftest.py and tests/helpers/, never through another test
    file (which would run, or silently stop running, that file's tests with it)."""
    files = sorted(TESTS.rglob("*.py"))
    found = [
        f"{path.relative_to(TESTS).as_posix()}:{line} imports {name}"
        for path in files
        for line, name in imports_of_test_files(path.read_text(encoding="utf-8"))
    ]
    assert found == [], found


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


FAST_ROOM = "minitrans.models.fast"
# the one place that makes the notes model fast, and the benchmark that turns its measures off one by one
APPLIES_FAST = {"minitrans.models.build", "minitrans.bench.speed_measures"}
FAST_NAMES = (
    "Fast",
    "make_fast",
    "step_loss",
    "PackedTokens",
    "packed_tokens",
    "fused_kernel_pays",
    "fused_attention",
    "use_fused",
)
NOTES_MODEL = ("models/attention.py", "models/transformer.py", "models/rnn.py", "models/loss.py")


def test_only_the_builder_imports_the_fast_room():
    """The notes model is the model: no module outside ``models/fast/`` imports it, except the
    builder that applies it, so what a learner reads in ``models/`` is what trains."""
    found = [
        f"{module} imports {target}"
        for module, targets in import_graph().items()
        for target in targets
        if target.startswith(FAST_ROOM) and not module.startswith(FAST_ROOM) and module not in APPLIES_FAST
    ]
    assert found == [], found


@pytest.mark.parametrize("path", modules(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_nothing_outside_the_fast_room_names_its_internals(path: Path):
    """Not even by name (a string, an attribute): the fast room's classes and functions are its
    own and the builder's, so a speed change never reaches into the notes model or the tools."""
    name = module_name(path)
    if name.startswith(FAST_ROOM) or name in APPLIES_FAST:
        return
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    names |= {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    strings = [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)]
    named = sorted(n for n in names if n.startswith(FAST_NAMES[0]) and n != "FastAPI" or n in FAST_NAMES[1:])
    code_strings = [s for s in strings if any(f in s for f in FAST_NAMES[1:]) and " " not in s.strip()]
    assert named == [] and code_strings == [], f"{name} names the fast room's internals: {named + code_strings}"


@pytest.mark.parametrize("relative", NOTES_MODEL)
def test_the_notes_model_computes_attention_written_out(relative: str):
    """No fused kernel and no switch to one in the notes model: attention there is the formula
    written out (``scaled_dot_product_attention`` of models/attention.py); the fused kernel is
    the fast room's."""
    tree = ast.parse((PACKAGE / relative).read_text(encoding="utf-8"))
    torch_attention = ("scaled_dot_product_attention", "multi_head_attention_forward", "MultiheadAttention")
    used = [
        ast.unparse(node) for node in ast.walk(tree) if isinstance(node, ast.Attribute) and node.attr in torch_attention
    ]
    used += [
        f"from {node.module} import {alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torch")
        for alias in node.names
        if alias.name in torch_attention
    ]
    assert used == [], f"{relative} uses PyTorch's attention: {used}"


DEVELOPMENT = PACKAGE.parent / "docs" / "development.md"
LAZY_SECTION = "## Imports inside functions"


def function_imports(source: str) -> list[tuple[int, str]]:
    """(line, module) of every import inside a function, at any depth (``from X import a`` names
    X), in line order."""
    found = set()
    for function in ast.walk(ast.parse(source)):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(function):
                if isinstance(node, ast.Import):
                    found |= {(node.lineno, alias.name) for alias in node.names}
                elif isinstance(node, ast.ImportFrom):
                    found.add((node.lineno, "." * node.level + (node.module or "")))
    return sorted(found)


def lazy_import_table(text: str) -> dict[tuple[str, str], str]:
    """(file, module) -> why, from the table of the section "Imports inside functions"."""
    section = text.split(LAZY_SECTION, 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        path, names, why = cells
        rows |= {(path.strip("`"), name): why for name in re.findall(r"`([^`]+)`", names)}
    return rows


def lazy_import_problems(found: dict[str, list[tuple[int, str]]], table: dict[tuple[str, str], str]) -> list[str]:
    """Each import inside a function that the table does not list, each row without a reason and
    each row that names an import no function of its file makes."""
    problems = [
        f"{path}:{line} imports {module} inside a function; move it to the top, or list it with its "
        f"reason in docs/development.md ({LAZY_SECTION[3:]})"
        for path, imports in sorted(found.items())
        for line, module in imports
        if (path, module) not in table
    ]
    made = {(path, module) for path, imports in found.items() for _, module in imports}
    problems += [
        f"the table lists {module} in {path}, which no function there imports"
        for path, module in table
        if (path, module) not in made
    ]
    problems += [
        f"the table gives no reason for {module} in {path}" for (path, module), why in table.items() if not why
    ]
    return problems


def test_lazy_import_problems_are_found():
    source = "import os\ndef f():\n    import json\n    def g():\n        from a.b import c\n"
    assert function_imports(source) == [(3, "json"), (5, "a.b")]
    table_text = f"{LAZY_SECTION}\n\n| module | imports | why |\n|---|---|---|\n| `m.py` | `json`, `gone` | slow |\n"
    table = lazy_import_table(table_text + "\n## Next\n| `n.py` | `x` | y |\n")
    assert table == {("m.py", "json"): "slow", ("m.py", "gone"): "slow"}
    problems = lazy_import_problems({"m.py": function_imports(source)}, table)
    assert problems == [
        "m.py:5 imports a.b inside a function; move it to the top, or list it with its reason in "
        "docs/development.md (Imports inside functions)",
        "the table lists gone in m.py, which no function there imports",
    ]
    assert lazy_import_problems({"m.py": [(3, "json")]}, {("m.py", "json"): ""}) == [
        "the table gives no reason for json in m.py"
    ]


def test_every_import_inside_a_function_is_listed_with_its_reason():
    """Imports sit at the top of a module; the few that must wait (an optional extra, a script's
    --help, a heavy library a common command never needs) are listed in one table with the reason,
    and the table holds nothing the code no longer does."""
    root = PACKAGE.parent
    files = modules() + sorted((root / "scripts").glob("*.py"))
    found = {p.relative_to(root).as_posix(): function_imports(p.read_text(encoding="utf-8")) for p in files}
    table = lazy_import_table(DEVELOPMENT.read_text(encoding="utf-8"))
    problems = lazy_import_problems({path: imports for path, imports in found.items() if imports}, table)
    assert problems == [], "\n".join(problems)


def test_the_layout_page_lists_the_layers_in_this_order():
    """docs/gen_reference.py orders the generated layout page by the layers; it keeps its own list
    (the docs import no test), so the two must agree."""
    import sys

    sys.path.insert(0, str(PACKAGE.parent / "docs"))
    import gen_reference

    assert gen_reference.LAYERS == sorted(LAYERS, key=LAYERS.get)
