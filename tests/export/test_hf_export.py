"""export.py --to hf: a folder in the Hub's layout (safetensors, config.json, tokenizer, training
record, model card) that translates exactly as the checkpoint did, loaded without torch.load;
--push-to-hub hands it to huggingface_hub.upload_folder (mocked: nothing leaves this machine)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from conftest import REPO, script_env
from helpers.checkpoints import EXPORT_SRC, SENTENCES, VARIANTS, build_export_checkpoint

from minitrans.core.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from minitrans.core.textio import read_json
from minitrans.export import hf_export
from minitrans.export.ct2_export import ExportError, shareable_config
from minitrans.export.hf_export import export_hf, push_to_hub
from minitrans.export.loading import load_torch_translator, load_translator
from minitrans.inference.coverage import TrainingRecord
from minitrans.inference.hf_folder import is_hf_export
from minitrans.inference.translator import Translator

sys.path.insert(0, str(REPO / "scripts"))
import export as export_script  # noqa: E402

SCORES = {
    "bleu": 12.89,
    "chrf": 20.5,
    "bleu_tokenize": "zh",
    "bleu_signature": "nrefs:1|case:mixed|eff:no|tok:zh|smooth:exp|version:2.6.0",
    "chrf_signature": "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0",
}


def make_run(root: Path, **model) -> Path:
    """A run folder as training leaves it: best.pt, summary.json and Hydra's record of the command."""
    run = root / "run"
    best = build_export_checkpoint(run / "checkpoints" / "best.pt", **model)
    payload = load_checkpoint(best)  # with the record of its training data, as the trainer writes it
    save_checkpoint(
        {**payload, "training_data": TrainingRecord.from_sentences(EXPORT_SRC, "de", "en", "multi30k").to_state()}, best
    )
    (run / "summary.json").write_text(json.dumps({"test": SCORES, "steps": 300, "weights": "best validation BLEU"}))
    (run / ".hydra").mkdir()
    (run / ".hydra" / "overrides.yaml").write_text("- data=hf\n- data.path=cmn.txt\n- data.tgt_lang=zh\n")
    return run


@pytest.fixture(scope="module")
def shared(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("hf")
    run = make_run(root)
    folder, _ = export_hf(run, root / "shared", license="apache-2.0")
    return run, folder


def no_pickle(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("torch.load was called")

    monkeypatch.setattr(torch, "load", refuse)


@pytest.mark.parametrize("variant", [*VARIANTS, "rnn_attention"])
def test_the_folder_translates_as_the_checkpoint_did_without_torch_load(tmp_path, variant, monkeypatch):
    model = {"kind": "rnn_attention"} if variant == "rnn_attention" else VARIANTS[variant][0]
    run = make_run(tmp_path, **model)
    ours = Translator.from_checkpoint(run, "cpu")
    folder, _ = export_hf(run, tmp_path / "shared")
    no_pickle(monkeypatch)
    loaded = Translator.from_pretrained(folder, "cpu")
    src_ids = ours.encode(SENTENCES)
    assert loaded.translate_encoded(src_ids) == ours.translate_encoded(src_ids)
    for name, tensor in ours.model.state_dict().items():
        assert torch.equal(loaded.model.state_dict()[name], tensor), name
    assert loaded.config == shareable_config(ours.config) and loaded.max_len == ours.max_len
    assert loaded.record.to_state() == ours.record.to_state()  # unseen-word warnings work as before
    # every loader of the scripts takes the folder (and its weights file) too
    for path in (folder, folder / "model.safetensors"):
        assert load_torch_translator(path, "cpu").translate_encoded(src_ids[:3]) == ours.translate_encoded(src_ids[:3])
    assert load_translator(folder, "cpu").translate_encoded(src_ids[:3]) == ours.translate_encoded(src_ids[:3])


def test_the_folder_holds_the_hubs_files(shared):
    run, folder = shared
    names = {path.name for path in folder.iterdir()}
    assert {"model.safetensors", "config.json", "src.model", "training_data.json", "README.md"} <= names
    assert not any(name.endswith((".pt", ".bin", ".pkl")) for name in names)
    header_size = int.from_bytes((folder / "model.safetensors").read_bytes()[:8], "little")
    header = json.loads((folder / "model.safetensors").read_bytes()[8 : 8 + header_size])  # safetensors: JSON + raw
    assert "src_embed.weight" in header and header["__metadata__"] == {"format": "pt"}
    config = json.loads((folder / "config.json").read_text())
    assert config["format"] == "minitrans-hf" and config["model_type"] == "minitrans"
    assert config["config"]["data"]["tgt_lang"] == "en" and config["max_len"] == 64
    assert is_hf_export(folder) and not is_hf_export(run)


def test_the_model_card_is_in_the_hubs_format(shared):
    _, folder = shared
    text = (folder / "README.md").read_text()
    assert text.startswith("---\n")
    meta = yaml.safe_load(text.split("---\n")[1])
    assert meta["language"] == ["de", "en"] and meta["license"] == "apache-2.0"
    assert meta["pipeline_tag"] == "translation" and "translation" in meta["tags"]
    metrics = meta["model-index"][0]["results"][0]["metrics"]
    bleu = next(m for m in metrics if m["type"] == "bleu")
    assert bleu["value"] == 12.89 and "tok:zh" in bleu["args"]
    body = text.split("---\n", 2)[2]
    assert "German → English" in body
    assert "python scripts/train.py data=hf data.path=cmn.txt data.tgt_lang=zh" in body  # the command that trained it
    assert "nrefs:1|case:mixed|eff:no|tok:zh" in body


@pytest.mark.parametrize("card", ["written today", "written by main at 29358fa"])
def test_the_cards_python_snippet_translates(shared, card, capsys):
    """What a model card tells its reader to run works, on a card written now and on one already
    shared (a published card cannot be rewritten)."""
    import re

    folder = shared[1] if card == "written today" else REPO / "tests" / "fixtures" / "main_29358fa" / "tiny_hf"
    (snippet,) = re.findall(r"```python\n(.*?)```", (folder / "README.md").read_text(), re.S)
    exec(snippet.replace("THIS_FOLDER", str(folder)).replace('["…"]', '["ein mann ."]'), {})
    printed = capsys.readouterr().out
    assert printed.startswith("[") and printed.strip() != "[]"


def test_from_checkpoint_refuses_a_shareable_folder_naming_its_loaders(shared):
    with pytest.raises(CheckpointError, match="shareable folder.*Translator.from_pretrained.*load_translator"):
        Translator.from_checkpoint(shared[1], "cpu")


def test_force_replaces_only_an_earlier_export(shared, tmp_path):
    run, _ = shared
    first, _ = export_hf(run, tmp_path / "out")
    with pytest.raises(ExportError, match="already exists"):
        export_hf(run, first)
    export_hf(run, first, force=True)  # an earlier export: replaced
    assert is_hf_export(first)
    other = tmp_path / "notes"
    other.mkdir()
    (other / "thesis.tex").write_text("x")
    with pytest.raises(ExportError, match="refusing to replace"):
        export_hf(run, other, force=True)
    assert (other / "thesis.tex").exists()
    with pytest.raises(ExportError, match="holds the checkpoint"):
        export_hf(run, run, force=True)
    assert (run / "checkpoints" / "best.pt").exists()


def test_a_folder_whose_config_does_not_match_its_weights_is_one_error(shared, tmp_path):
    _, folder = shared
    bad = tmp_path / "bad"
    bad.mkdir()
    for path in folder.iterdir():
        (bad / path.name).write_bytes(path.read_bytes())
    config = json.loads((bad / "config.json").read_text())
    config["config"]["model"]["d_model"] = 4096
    (bad / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match=r"does not hold a usable model .*disagree"):
        Translator.from_pretrained(bad, "cpu")
    with pytest.raises(CheckpointError, match="not a folder written by export.py --to hf"):
        Translator.from_pretrained(tmp_path, "cpu")


@pytest.mark.parametrize("scale", ["1e-45", "1e-30", 1e-300])
def test_an_overflowing_attention_scale_in_a_shared_config_is_refused_naming_it(shared, tmp_path, scale):
    """A divisor whose scores overflow float32 would translate to NaN pieces or empty lines."""
    _, folder = shared
    bad = tmp_path / "bad"
    bad.mkdir()
    for path in folder.iterdir():
        (bad / path.name).write_bytes(path.read_bytes())
    config = json.loads((bad / "config.json").read_text())
    config["config"]["model"]["attention_scale"] = scale
    (bad / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match=r"model\.attention_scale: .* is less than 1e-06: .*overflow") as refused:
        load_translator(bad, "cpu")
    assert "\n" not in str(refused.value)


def test_both_cards_name_the_teaching_switches_a_model_trained_with(shared, tmp_path):
    from minitrans.inference.model_card import model_card

    run = make_run(tmp_path, positions="none", causal_mask=False, attention_scale="2")
    folder, _ = export_hf(run, tmp_path / "switched")
    readme = (folder / "README.md").read_text()
    assert "teaching switches (`model.attention_scale=2`, `model.causal_mask=false`, `model.positions=none`)" in readme
    info = model_card(Translator.from_pretrained(folder, "cpu"))
    assert "teaching:   trained with model.attention_scale=2, model.causal_mask=false, model.positions=none" in info
    _, plain = shared
    assert "teaching switch" not in (plain / "README.md").read_text()
    assert "teaching:" not in model_card(Translator.from_pretrained(plain, "cpu"))


class FakeHub:
    """huggingface_hub.HfApi's two calls, recorded."""

    calls: list = []

    def __init__(self, token=None):
        self.token = token

    def create_repo(self, repo_id, **kwargs):
        FakeHub.calls.append(("create_repo", repo_id, kwargs))

    def upload_folder(self, **kwargs):
        FakeHub.calls.append(("upload_folder", kwargs))
        return type("Commit", (), {"commit_url": f"https://hub.example/{kwargs['repo_id']}/commit/1"})()


def test_push_to_hub_uploads_the_folder(shared, monkeypatch):
    import huggingface_hub

    _, folder = shared
    FakeHub.calls = []
    monkeypatch.setattr(huggingface_hub, "HfApi", FakeHub)
    url = push_to_hub(folder, "someone/minitrans-de-en", private=True)
    assert url.endswith("someone/minitrans-de-en/commit/1")
    assert FakeHub.calls[0] == (
        "create_repo",
        "someone/minitrans-de-en",
        {"repo_type": "model", "private": True, "exist_ok": True},
    )
    upload = FakeHub.calls[1][1]
    assert upload["folder_path"] == str(folder) and upload["repo_id"] == "someone/minitrans-de-en"


def test_the_script_exports_and_pushes(shared, tmp_path, monkeypatch, capsys):
    import huggingface_hub

    run, _ = shared
    FakeHub.calls = []
    monkeypatch.setattr(huggingface_hub, "HfApi", FakeHub)
    out = tmp_path / "model"
    assert export_script.main([str(run), str(out), "--to", "hf", "--push-to-hub", "me/model"]) == 0
    printed = capsys.readouterr().out
    assert f"exported {run} to {out}" in printed and "uploaded" in printed
    assert FakeHub.calls[1][1]["folder_path"] == str(out)

    class Offline(FakeHub):
        def create_repo(self, repo_id, **kwargs):
            raise huggingface_hub.errors.LocalTokenNotFoundError("Token is required, none found\nmore")

    monkeypatch.setattr(huggingface_hub, "HfApi", Offline)
    assert export_script.main([str(run), str(out), "--to", "hf", "--force", "--push-to-hub", "me/model"]) == 1
    assert capsys.readouterr().err == (
        f"error: --push-to-hub me/model: Token is required, none found (the folder is exported: {out})\n"
    )


def test_the_script_refuses_options_of_the_other_format(shared, tmp_path):
    run, _ = shared
    with pytest.raises(SystemExit):
        export_script.parse_args([str(run), str(tmp_path / "x"), "--push-to-hub", "me/model"])
    with pytest.raises(SystemExit):
        export_script.parse_args([str(run), str(tmp_path / "x"), "--to", "hf", "--quantization", "int8"])


def test_hf_export_module_states_its_files():
    for name in (hf_export.WEIGHTS, hf_export.CONFIG, hf_export.RECORD, hf_export.CARD):
        assert name in hf_export.__doc__


@pytest.mark.slow
def test_translate_and_evaluate_scripts_take_the_folder(shared):
    _, folder = shared
    ours = Translator.from_pretrained(folder, "cpu").translate(["ein mann fährt fahrrad ."])
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "translate.py"), str(folder), "ein mann fährt fahrrad ."],
        cwd=REPO,
        env=script_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ours


def test_heads_and_serve_take_the_folder_translate_takes(tmp_path, capsys):
    """A shared folder of a generated-corpus run: heads.py measures it (results in --out or the
    folder's heads/, as evaluate.py writes the folder's eval/), and serve.py's model loads it,
    named after the folder."""
    import importlib.util

    from helpers.checkpoints import build_cased_checkpoint as build_generated

    pytest.importorskip("fastapi", reason='the web app\'s extra is not installed: pip install -e ".[demo]"')
    from minitrans.core.config import DataConfig
    from minitrans.serve.app import ServedModel

    run = tmp_path / "run"
    build_generated(run / "checkpoints" / "best.pt", DataConfig(num_train=50, num_valid=10, num_test=12))
    folder, _ = export_hf(run, tmp_path / "shared")
    spec = importlib.util.spec_from_file_location("heads_script", REPO / "scripts" / "heads.py")
    heads = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(heads)
    assert heads.main([str(folder), "--split", "test", "--limit", "4", "--bleu-limit", "0", "--no-ablation"]) == 0
    assert json.loads((folder / "heads" / "aer.json").read_text())["aer_sentences"] == 4
    served = ServedModel.load(folder, "cpu")
    assert served.name == "shared" and served.info()["attention"]["cross"] == {"layers": 1, "heads": 2}


def copy_of(folder: Path, to: Path) -> Path:
    to.mkdir()
    for path in folder.iterdir():
        (to / path.name).write_bytes(path.read_bytes())
    return to


@pytest.mark.parametrize("name", ["src.model", "config.json", "model.safetensors", "training_data.json"])
def test_a_fifo_or_dev_zero_in_a_shared_folder_is_one_error_not_a_hang(shared, tmp_path, name):
    import os
    import signal

    _, folder = shared
    for kind in ("fifo", "zero"):
        bad = copy_of(folder, tmp_path / kind)
        (bad / name).unlink()
        if kind == "fifo":
            os.mkfifo(bad / name)  # nobody ever writes to it: reading it would wait forever
        else:
            (bad / name).symlink_to("/dev/zero")  # reading it whole would fill the memory
        signal.alarm(20)  # a hang fails the test instead of the suite
        try:
            if name == "config.json":  # without its config the folder is not taken for an export at all
                assert not is_hf_export(bad)
                with pytest.raises(CheckpointError, match="not a folder written by export.py --to hf"):
                    Translator.from_pretrained(bad, "cpu")
            else:
                with pytest.raises(CheckpointError, match=rf"{name} is (a FIFO|a device), not a regular file"):
                    Translator.from_pretrained(bad, "cpu")
        finally:
            signal.alarm(0)


def test_hostile_json_and_sizes_in_a_shared_folder_are_one_error_each(shared, tmp_path, monkeypatch):
    from minitrans.models import build

    _, folder = shared
    # the tiny model's 65,536 positions take 8 MiB; the rule (twice the weights and 64 MiB) scaled down
    monkeypatch.setattr(build, "LOOSE_BYTES", 1 << 20)
    config = json.loads((folder / "config.json").read_text())
    cases = {
        "nested": ("config.json", '{"format": "minitrans-hf", "config": ' + "[" * 100_000 + "]" * 100_000 + "}"),
        "model-list": ("config.json", json.dumps({**config, "config": {**config["config"], "model": [1, 2]}})),
        "record": ("training_data.json", json.dumps({"word_counts": 5})),
        "record-list": ("training_data.json", "[1, 2, 3]"),
        "positions": (
            "config.json",
            json.dumps(
                {**config, "config": {**config["config"], "model": {**config["config"]["model"], "max_len": 65536}}}
            ),
        ),
    }
    reasons = {
        "nested": "nests its JSON too deeply",
        "model-list": "'model' must be an object, not list",
        "record": "AttributeError|TypeError",
        "record-list": "training_data.json holds a list, not an object",
        "positions": r"asks for [\d,]+ MiB of parameters and buffers, the weights hold [\d,]+ MiB .*max_len=65536",
    }
    for case, (name, text) in cases.items():
        bad = copy_of(folder, tmp_path / case)
        (bad / name).write_text(text)
        if case == "nested":  # no longer an export: nothing in it is trusted
            assert not is_hf_export(bad)
            with pytest.raises(ValueError, match=reasons[case]):
                read_json(bad / name)
            continue
        with pytest.raises(CheckpointError, match=rf"does not hold a usable model \(.*({reasons[case]})"):
            Translator.from_pretrained(bad, "cpu")


def test_an_export_carries_none_of_the_exporters_paths(tmp_path):
    from minitrans.export.ct2_export import shareable_source

    corpus = tmp_path / "my-corpus"
    corpus.mkdir()
    config = {"data": {"name": "parallel", "root": str(corpus), "cache_dir": str(tmp_path / "cache"), "path": None}}
    assert shareable_config(config) == {"data": {"name": "parallel", "root": "my-corpus", "path": None}}
    hub = {"data": {"name": "hf", "path": "bentrevett/multi30k", "cache_dir": "~/.cache/minitrans"}}
    assert shareable_config(hub) == {"data": {"name": "hf", "path": "bentrevett/multi30k"}}
    assert shareable_source(tmp_path / "runs" / "base" / "checkpoints" / "best.pt") == "base/checkpoints/best.pt"

    run = make_run(tmp_path)
    payload = load_checkpoint(run / "checkpoints" / "best.pt")
    payload["config"]["data"] |= {"cache_dir": str(tmp_path / "secret-cache"), "root": str(corpus)}
    save_checkpoint(payload, run / "checkpoints" / "best.pt")
    folder, _ = export_hf(run, tmp_path / "shared")
    written = "".join(path.read_text(encoding="utf-8") for path in folder.iterdir() if path.suffix in (".json", ".md"))
    assert str(tmp_path) not in written and "secret-cache" not in written
    assert json.loads((folder / "config.json").read_text())["source"] == "run/checkpoints/best.pt"
    assert Translator.from_pretrained(folder, "cpu").config["data"]["root"] == "my-corpus"


def test_int64_or_nan_weights_are_refused_not_translated_to_question_marks(shared, tmp_path):
    from safetensors.torch import load_file, save_file

    _, folder = shared
    weights = load_file(str(folder / "model.safetensors"))
    key = next(iter(weights))
    for case, value, reason in (
        ("int", weights[key].to(torch.int64), "holds torch.int64, not floating-point numbers"),
        ("nan", torch.full_like(weights[key], float("nan")), "holds NaN or infinite values"),
    ):
        bad = copy_of(folder, tmp_path / case)
        save_file({**weights, key: value}, str(bad / "model.safetensors"))
        with pytest.raises(CheckpointError, match=rf"does not hold a usable model .*{key} {reason}"):
            Translator.from_pretrained(bad, "cpu")


@pytest.mark.parametrize("repo", ["../../etc/passwd", "", "me/model.", "a--b/model", "me/" + "x" * 97])
def test_a_bad_hub_repository_id_is_refused_before_anything_is_exported(shared, tmp_path, capsys, repo):
    run, _ = shared
    out = tmp_path / "model"
    with pytest.raises(SystemExit) as exit_info:
        export_script.main([str(run), str(out), "--to", "hf", "--push-to-hub", repo])
    assert exit_info.value.code == 2 and not out.exists()
    assert f"--push-to-hub {repo!r}: not a Hub repository id" in capsys.readouterr().err


def test_a_license_with_a_newline_cannot_add_keys_to_the_cards_front_matter(shared, tmp_path):
    run, _ = shared
    folder, _ = export_hf(run, tmp_path / "card", license="mit\npipeline_tag: text-generation")
    meta = yaml.safe_load((folder / "README.md").read_text().split("---\n")[1])
    assert meta["license"] == "mit\npipeline_tag: text-generation" and meta["pipeline_tag"] == "translation"
