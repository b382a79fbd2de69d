"""The README and the documentation site: short README, commands that parse, references that list
everything, a Quick start that runs as written (slow) and a tutorial notebook that executes (slow).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS))

import gen_reference  # noqa: E402
from helpers.doc_commands import (  # noqa: E402
    PAGES,
    documented_invocations,
    fenced_blocks,
    script_invocations,
    shell_commands,
)

from minitrans.core.hydra_config import check_command_line  # noqa: E402

# --- commands in the pages --------------------------------------------------------------------


def problem_with(script: str, args: list[str]) -> str | None:
    """Why ``script args`` would be refused before it does anything, or None."""
    if script == "scripts/train.py":
        return check_command_line(args, str(ROOT / "conf"))
    if script.endswith(".py") and "argparse" not in (ROOT / script).read_text(encoding="utf-8"):
        return None  # sys.argv read by hand: no option to check
    name = script if script.startswith("python -m") else script.removeprefix("scripts/")
    parser = gen_reference.script_parser(name)
    parser.exit_on_error = False
    try:
        parser.parse_args(args)
    except SystemExit as exit_info:  # --help, or an error argparse reports itself
        return None if exit_info.code == 0 else f"exit {exit_info.code}"
    except Exception as error:
        return str(error)
    return None


INVOCATIONS = documented_invocations()


def test_the_pages_document_the_scripts():
    scripts = {script for _, script, _, _ in INVOCATIONS}
    assert {"scripts/train.py", "scripts/translate.py", "scripts/evaluate.py", "scripts/serve.py"} <= scripts
    assert len(INVOCATIONS) > 60


@pytest.mark.parametrize(
    ("page", "script", "args", "fails"),
    INVOCATIONS,
    ids=[f"{page}:{script}:{' '.join(args)[:60]}" for page, script, args, _ in INVOCATIONS],
)
def test_a_documented_command_parses(page, script, args, fails, capsys):
    problem = problem_with(script, args)
    capsys.readouterr()
    if fails:
        assert problem is not None, f"{page}: documented as failing, but it parses: {script} {shlex.join(args)}"
    else:
        assert problem is None, f"{page}: {script} {shlex.join(args)}: {problem}"


def test_the_documented_error_lines_are_what_the_program_prints_today():
    """A ``# error:`` line under a ``train.py`` command quotes the refusal word for word."""
    checked = 0
    for page in PAGES:
        for _, lines in fenced_blocks(page.read_text(encoding="utf-8")):
            for command, comment in zip(lines, lines[1:]):
                if comment.startswith("# error: ") and command.startswith("python scripts/train.py "):
                    args = shlex.split(command, comments=True)[2:]
                    assert problem_with("scripts/train.py", args) == comment.removeprefix("# error: "), page
                    checked += 1
    assert checked >= 2


def test_the_quoted_schema_field_has_todays_default():
    from minitrans.core.config import TransformerConfig

    text = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    assert f"d_ff: int = knob({TransformerConfig().d_ff}," in text


def test_getting_started_says_bleus_tokenizer_follows_the_target_language():
    text = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    sentence = next(line for line in text.splitlines() if "BLEU is sacrebleu's corpus BLEU" in line)
    assert "for this target language" in sentence
    assert all(f"`{name}`" in sentence for name in ("13a", "zh", "ja-mecab", "ko-mecab", "intl", "norm:nfc"))
    assert "[tokenize 13a, norm:nfc] |" in text  # the run's last line, as summary_line writes it


def test_the_checker_finds_a_misspelt_option_and_key(capsys):
    (command,) = shell_commands("```bash\npython scripts/translate.py RUN --bean 5 > out.txt  # typo\n```")
    ((script, args),) = script_invocations(command[0])
    assert (script, args) == ("scripts/translate.py", ["RUN", "--bean", "5"])
    assert problem_with(script, args) is not None
    assert problem_with("scripts/translate.py", ["RUN", "--beam", "5"]) is None
    assert problem_with("scripts/train.py", ["model.num_hedas=4"]) is not None
    assert problem_with("scripts/train.py", ["-m", "model.num_heads=1,2", "model.d_k=null"]) is None


def test_commands_are_found_in_console_blocks_and_across_lines():
    text = (
        "```\n$ printf 'a\\n' | python scripts/translate.py runs/x --nbest 2 \\\n    --scores\nDie Katze.\n```\n"
        "```bash\ntorchrun --standalone scripts/train.py hydra.run.dir=runs/big   # a comment\n"
        "python scripts/train.py model.num_hedas=4\n# error: model.num_hedas: unknown key\n"
        "pytest tests/serve/test_serve_browser.py\n```\n"
    )
    commands = shell_commands(text)
    found = [(script, args, fails) for command, fails in commands for script, args in script_invocations(command)]
    assert found == [
        ("scripts/translate.py", ["runs/x", "--nbest", "2", "--scores"], False),
        ("scripts/train.py", ["hydra.run.dir=runs/big"], False),
        ("scripts/train.py", ["model.num_hedas=4"], True),
    ]


def test_the_python_examples_import_what_exists():
    """Each ``from minitrans… import …`` of the pages' Python blocks names something that exists,
    and each ``translator.NAME(`` call a method the Translator has."""
    import importlib

    from minitrans.inference.translator import Translator

    checked = 0
    for page in PAGES:
        for language, lines in fenced_blocks(page.read_text(encoding="utf-8")):
            if language != "python":
                continue
            for line in lines:
                imported = re.match(r"from (minitrans[\w.]*) import (.+?)(\s+#.*)?$", line)
                if imported:
                    module = importlib.import_module(imported.group(1))
                    for name in imported.group(2).split(","):
                        assert hasattr(module, name.strip()), f"{page.name}: {line}"
                        checked += 1
                for method in re.findall(r"\btranslator\.(\w+)\b", line):
                    assert hasattr(Translator, method), f"{page.name}: {line}"
                    checked += 1
    assert checked >= 5


# --- the README ----------------------------------------------------------------------------------


def readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_is_short_and_links_to_pages_that_exist():
    text = readme()
    assert len(text.splitlines()) <= 250
    for target in re.findall(r"\]\(((?:docs|data)/[^)#]+)", text):
        assert (ROOT / target).exists(), target


def test_the_readme_test_command_is_the_one_ci_runs():
    ci_commands = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    ci_tests = [line for line in ci_commands if line.split()[:1] == ["pytest"]]
    readme_tests = [cmd for cmd, _ in shell_commands(readme()) if cmd.split()[:1] == ["pytest"]]
    assert ci_tests and readme_tests
    assert {c.split("#")[0].strip() for c in readme_tests} <= {c.split("#")[0].strip() for c in ci_tests}


def quick_start_commands() -> list[str]:
    section = readme().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [command for command, _ in shell_commands(section)]


def test_the_quick_start_chains_one_named_run_folder():
    commands = quick_start_commands()
    assert commands[0].startswith("python scripts/train.py hydra.run.dir=")
    folder = commands[0].split("hydra.run.dir=")[1].split()[0]
    for command in commands[1:]:
        assert folder in command, command
    assert any("tensorboard" in command for command in commands)
    assert any("scripts/serve.py" in command for command in commands)


# --- the generated references --------------------------------------------------------------------


def test_the_configuration_reference_lists_every_key():
    page = gen_reference.config_markdown()
    missing = [key for key in gen_reference.config_keys() if f"`{key}`" not in page]
    assert missing == []
    assert "model.num_heads" in page and "trainer.max_steps" in page


def test_the_cli_reference_lists_every_option_of_every_script():
    page = gen_reference.cli_markdown()
    for name in gen_reference.argparse_scripts():
        parser = gen_reference.script_parser(name)
        assert f"## {name.removeprefix('python -m ')}" in page
        missing = [option for option in gen_reference.option_strings(parser) if option not in page]
        assert missing == [], name


def test_the_layout_page_names_every_module():
    page = gen_reference.layout_markdown()
    for module in (ROOT / "minitrans").glob("*/*.py"):
        if module.name != "__init__.py":
            assert f"`{module.parent.name}/{module.name}`" in page


def test_every_page_is_in_the_site_navigation():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in [*DOCS.rglob("*.md"), *DOCS.rglob("*.ipynb")]:
        assert str(page.relative_to(DOCS)) in nav, page


def _nav_pages(entries) -> list[str]:
    """The files of a navigation section, in order, its subsections' too."""
    pages = []
    for entry in entries:
        for value in entry.values() if isinstance(entry, dict) else [entry]:
            pages += _nav_pages(value) if isinstance(value, list) else [value]
    return pages


def test_the_navigation_separates_learning_from_using_from_reference():
    import yaml

    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    sections = {name: _nav_pages(value) for entry in nav for name, value in entry.items() if isinstance(value, list)}
    assert list(sections) == ["Learn", "Use", "Reference / Development"]
    assert sections["Learn"][:6] == [
        "getting-started.md",
        "tutorial/index.md",
        "tutorial/attention_tour.ipynb",
        "tutorial/from_an_empty_file.ipynb",
        "concepts.md",
        "attention-measured.md",
    ]
    assert "claims.md" in sections["Learn"]
    assert sections["Use"] == [
        "own-data.md",
        "translating.md",
        "explorer.md",
        "tensorboard.md",
        "runs.md",
        "sweeps-measured.md",
    ]
    assert {"reference/configuration.md", "reference/cli.md", "results.md", "performance.md", "layout.md"} <= set(
        sections["Reference / Development"]
    )


@pytest.mark.parametrize("page", ["README.md", "docs/tutorial/index.md", "docs/concepts.md"])
def test_the_learner_pages_link_the_measured_pages(page):
    text = (ROOT / page).read_text(encoding="utf-8")
    assert re.search(r"\]\((docs/|\.\./)?attention-measured\.md\)", text), page
    assert re.search(r"\]\((docs/|\.\./)?claims\.md\)", text), page


def test_the_cli_reference_puts_what_a_learner_runs_before_the_benchmarks():
    names = gen_reference.argparse_scripts()
    assert names[:3] == ["translate.py", "evaluate.py", "serve.py"]
    assert names.index("serve.py") < min(names.index(n) for n in names if "bench" in n or n == "throughput.py")


def test_equations_are_math_typeset_in_the_browser_not_code():
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    extensions = {next(iter(e)) if isinstance(e, dict) else e: e for e in config["markdown_extensions"]}
    assert extensions["pymdownx.arithmatex"] == {"pymdownx.arithmatex": {"generic": True}}
    scripts = config["extra_javascript"]
    assert any(s.endswith("katex.min.js") for s in scripts) and any(s.endswith("auto-render.min.js") for s in scripts)
    render = next(s for s in scripts if s.endswith("javascripts/katex.js"))  # after the KaTeX it calls
    assert scripts.index(render) == len(scripts) - 1
    assert "renderMathInElement" in (DOCS / render).read_text(encoding="utf-8")
    concepts = (DOCS / "concepts.md").read_text(encoding="utf-8")
    assert r"\mathrm{softmax}" in concepts and r"\sum_j \alpha_{ij} h_j" in concepts
    code_spans = re.findall(r"`([^`]+)`", re.sub(r"```.*?```", "", concepts, flags=re.S))
    assert not [span for span in code_spans if re.search(r"softmax\(|Σ_j|sin\(pos|√d_k\)", span)]


def test_every_picture_has_alt_text():
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        assert not re.findall(r"!\[\s*\]\(", text), page


def test_the_pages_that_start_a_server_on_8000_say_how_to_run_two():
    for page in (ROOT / "README.md", DOCS / "explorer.md", DOCS / "tutorial" / "index.md"):
        assert "--port 0" in page.read_text(encoding="utf-8"), page


def test_the_default_runs_test_bleu_is_one_figure_everywhere():
    row = next(line for line in readme().splitlines() if line.startswith("| default run"))
    bleu = re.search(r"\*\*(\d+\.\d+)\*\*", row).group(1)
    assert "`python scripts/train.py hydra.run.dir=runs/default`" in row
    for page in ("README.md", "docs/getting-started.md", "docs/tutorial/index.md", "docs/results.md"):
        text = (ROOT / page).read_text(encoding="utf-8")
        assert re.search(rf"(?<![\d.]){re.escape(bleu)}(?![\d])", text), page
        assert "about 97.7" not in text, page
    results = (DOCS / "results.md").read_text(encoding="utf-8").split("## The default run", 1)[1]
    assert f"**{bleu}**" in results.split("\n\n", 3)[2]  # the section's table
    for page in ("README.md", "docs/index.md", "docs/getting-started.md"):
        assert "about 5½ minutes" in (ROOT / page).read_text(encoding="utf-8"), page


# --- the notebook and the install path ---------------------------------------------------------

NOTEBOOK = DOCS / "tutorial" / "attention_tour.ipynb"


def notebook_cells(kind: str) -> list[str]:
    import json

    return [
        "".join(cell["source"])
        for cell in json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
        if cell["cell_type"] == kind
    ]


def test_the_notebook_works_the_notes_example_and_computes_the_exact_figures():
    code = "\n".join(notebook_cells("code"))
    first = notebook_cells("code")[1]
    assert "X = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, 1.0], [0.5, 1.0]])" in first
    assert "/ math.sqrt(2)" in first and ".softmax(dim=-1)" in first
    assert "[0.25, 0.15, 0.25, 0.25, 0.10]" in code and "[0.73, 0.68]" in code  # the notes' printed figures
    for exact in ("0.238", "0.118", "0.799", "0.762", "0.890"):  # computed in the cells, never typed
        assert exact not in code, exact


def test_the_notebook_builds_heads_and_cross_attention_by_hand_and_shows_the_scale():
    code = "\n".join(notebook_cells("code"))
    assert "torch.cat(heads, dim=-1)" in code and "attention.out_proj(concatenated)" in code
    assert "cross.q_proj(y)" in code and "cross.kv_proj(memory)" in code
    assert code.count("assert torch.allclose(by_hand, from_module") == 2
    assert "Var(q·k)" in code and "/ math.sqrt(d_k)" in code
    assert "colorbar" in code


def test_the_notebook_writes_its_runs_outside_the_checkout():
    code = "\n".join(notebook_cells("code"))
    assert "tempfile.mkdtemp" in code
    assert not re.search(r"[\"']runs/", code)


def test_the_notebook_links_name_pages_that_exist():
    text = "\n".join(notebook_cells("markdown"))
    links = re.findall(r"\]\(([^)#]+\.(?:md|ipynb))", text) + re.findall(r'href="([^"#]+)"', text)
    assert len(links) >= 5
    for link in links:
        assert (NOTEBOOK.parent / link).resolve().is_file(), link


def test_the_notebook_cites_the_readmes_bottleneck_figure():
    text = "\n".join(notebook_cells("markdown"))
    start, end = re.search(r"\((\d+) → (\d+) BLEU\)", readme()).groups()
    assert f"falls from {start} BLEU" in text and f"to {end} beyond 50" in text


def test_the_notebook_opens_with_the_jupyter_extra_and_offers_a_download():
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert any(requirement.startswith("jupyterlab") for requirement in extras["jupyter"])
    intro = notebook_cells("markdown")[0]
    assert 'pip install -e ".[dev,jupyter]"' in intro and "jupyter lab docs/tutorial/attention_tour.ipynb" in intro
    assert '<a href="attention_tour.ipynb" download>' in intro
    assert '".[jupyter]"' in readme()


def test_the_readme_says_how_to_get_the_cpu_build_of_torch():
    text = readme()
    assert 'pip install "torch==2.13.0" && pip install -e ".[dev]"' in text
    assert '"torch==2.13.0" --index-url https://download.pytorch.org/whl/cpu' in text
    assert "GPU build works unchanged" in text


# --- slow: the Quick start as written, the notebook ----------------------------------------------

TINY_RUN = [
    "data.num_train=120",
    "data.num_valid=12",
    "data.num_test=12",
    "data.max_words=10",
    "data.vocab_size=400",
    "model.d_model=32",
    "model.num_heads=2",
    "model.d_ff=64",
    "model.num_encoder_layers=1",
    "model.num_decoder_layers=1",
    "trainer.max_steps=20",
    "trainer.eval_every=10",
    "trainer.eval_sentences=4",
    "trainer.num_threads=1",
    "trainer.processes=1",  # a model this small: one process (tests/training/test_launch.py trains two)
    "trainer.progress=false",
]


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    env.update(OMP_NUM_THREADS="1", MINITRANS_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    return env


@pytest.mark.slow
def test_the_quick_start_runs_as_written(tmp_path):
    """Each Quick start command, in a copy's folder, with tiny overrides added to the training:
    train, translate (the run folder it made), then TensorBoard's and the explorer's servers
    start on that folder and answer."""
    import shutil
    import socket
    import time
    import urllib.request

    for name in ("scripts", "conf"):
        shutil.copytree(ROOT / name, tmp_path / name)
    env = _env(tmp_path)
    commands = quick_start_commands()
    servers = []
    try:
        for command in commands:
            command = command.split(" && ")[-1]  # the extra's install is the set-up's business
            argv = shlex.split(command, comments=True)
            if argv[:2] == ["python", "scripts/train.py"]:
                argv += TINY_RUN
            if argv[0] == "python":
                argv[0] = sys.executable
            if argv[0] == "tensorboard":
                if shutil.which("tensorboard") is None:
                    pytest.fail("the Quick start runs tensorboard, which is not installed")
                port = _free_port(socket)
                argv += ["--port", str(port), "--host", "127.0.0.1"]
                servers.append(
                    (
                        subprocess.Popen(
                            argv, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
                        ),
                        f"http://127.0.0.1:{port}/data/runs",
                    )
                )
                continue
            if argv[1].endswith("scripts/serve.py"):
                pytest.importorskip("fastapi", reason='the explorer is in the demo extra: pip install -e ".[demo]"')
                port = _free_port(socket)
                argv += ["--port", str(port)]
                servers.append(
                    (
                        subprocess.Popen(
                            argv, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
                        ),
                        f"http://127.0.0.1:{port}/info",
                    )
                )
                continue
            done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, f"{command}\n{done.stderr[-2000:]}"
            if "translate.py" in command and "--info" not in command:
                assert done.stdout.strip(), "no translation printed"
        folder = tmp_path / commands[0].split("hydra.run.dir=")[1].split()[0]
        assert (folder / "checkpoints" / "best.pt").exists()
        assert list(folder.glob("events.out.tfevents.*"))
        for process, url in servers:
            deadline = time.monotonic() + 120
            while True:
                assert process.poll() is None, f"{process.args} ended with {process.returncode}"
                try:
                    with urllib.request.urlopen(url, timeout=5) as answer:
                        assert answer.status == 200
                        break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(1)
    finally:
        for process, _ in servers:
            process.terminate()
            process.wait(timeout=30)


def _free_port(socket) -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow
def test_the_tutorial_notebook_executes(tmp_path):
    nbformat = pytest.importorskip(
        "nbformat", reason='the notebook runner is in the docs extra: pip install -e ".[docs]"'
    )
    nbclient = pytest.importorskip(
        "nbclient", reason='the notebook runner is in the docs extra: pip install -e ".[docs]"'
    )
    notebook = nbformat.read(DOCS / "tutorial" / "attention_tour.ipynb", as_version=4)
    # The lesson trains a Transformer 400 steps and two GRUs 1,000 each; whether every cell runs
    # is the same question with 60 and 40.
    shorter = {
        '"trainer.max_steps=400", "trainer.eval_every=400"': '"trainer.max_steps=60", "trainer.eval_every=60"',
        '"trainer.max_steps=1000", "trainer.eval_every=1000"': '"trainer.max_steps=40", "trainer.eval_every=40"',
    }
    found = set()
    for cell in notebook.cells:
        for lesson, test in shorter.items():
            if lesson in cell.source:
                cell.source = cell.source.replace(lesson, test)
                found.add(lesson)
    assert found == set(shorter), f"the notebook's runs changed: {set(shorter) - found} not found"
    os.environ.setdefault("MINITRANS_CACHE_DIR", str(tmp_path / "cache"))
    client = nbclient.NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    assert not [output for output in outputs if output.output_type == "error"]
    assert any(output.output_type == "display_data" for output in outputs), "no figure drawn"
