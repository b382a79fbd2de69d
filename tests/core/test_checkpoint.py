"""Checkpoints: atomic writes that survive a failure or a kill mid-save, loading that never runs
code from the file (whatever the environment says), and one clear error for a bad file."""

from __future__ import annotations

import io
import os
import pickle
import re
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

import minitrans.core.checkpoint as checkpoint
from minitrans.core.checkpoint import CheckpointError, load_checkpoint, resolve_checkpoint, save_checkpoint


def payload(value: float) -> dict:
    return {"model": {"weight": torch.full((4, 3), value)}, "step": int(value), "tokenizer": {"src": b"\x00proto"}}


def leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_round_trip_writes_a_plain_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "ckpt" / "last.pt"
    save_checkpoint(payload(1.0), path)
    loaded = load_checkpoint(path)
    assert loaded["format"] == checkpoint.FORMAT and loaded["step"] == 1
    assert torch.equal(loaded["model"]["weight"], torch.ones(4, 3)) and loaded["tokenizer"]["src"] == b"\x00proto"
    assert leftovers(path.parent) == []
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask  # not mkstemp's private 0600


def test_a_save_that_fails_half_way_leaves_the_previous_checkpoint_intact(tmp_path, monkeypatch):
    path = tmp_path / "last.pt"
    save_checkpoint(payload(1.0), path)
    real_save = torch.save

    def half_then_fail(obj, file):
        buffer = io.BytesIO()
        real_save(obj, buffer)
        file.write(buffer.getvalue()[: len(buffer.getvalue()) // 2])
        raise OSError("disk full")

    monkeypatch.setattr(checkpoint.torch, "save", half_then_fail)
    with pytest.raises(
        CheckpointError, match=r"^could not write .*last\.pt: disk full \(\d+ bytes free on .*; the previous"
    ):
        save_checkpoint(payload(2.0), path)
    monkeypatch.undo()
    assert load_checkpoint(path)["step"] == 1
    assert leftovers(tmp_path) == []


def test_torchs_unexpected_pos_from_a_full_disk_names_the_file_and_its_free_space(tmp_path, monkeypatch):
    """torch's zip writer reports a failed write as ``RuntimeError ... unexpected pos``: it was a
    traceback (issue 33, item 11)."""
    import shutil

    path = tmp_path / "last.pt"
    save_checkpoint(payload(1.0), path)

    def writer_fails(obj, file):
        file.write(b"PK\x03\x04 half an archive")
        raise RuntimeError("[enforce fail at inline_container.cc:664] . unexpected pos 1472 vs 1368")

    monkeypatch.setattr(checkpoint.torch, "save", writer_fails)
    monkeypatch.setattr(shutil, "disk_usage", lambda folder: shutil._ntuple_diskusage(10**9, 10**9 - 512, 512))
    with pytest.raises(CheckpointError) as error:
        save_checkpoint(payload(2.0), path)
    monkeypatch.undo()
    message = str(error.value)
    assert message.startswith(f"could not write {path}: ") and "\n" not in message
    assert f"512 bytes free on the disk of {tmp_path}" in message and "previous checkpoint there is intact" in message
    assert load_checkpoint(path)["step"] == 1 and leftovers(tmp_path) == []


def test_another_runtime_error_while_saving_is_not_taken_for_a_full_disk(tmp_path, monkeypatch):
    def bug(obj, file):
        raise RuntimeError("something else")

    monkeypatch.setattr(checkpoint.torch, "save", bug)
    with pytest.raises(RuntimeError, match="^something else$"):
        save_checkpoint(payload(2.0), tmp_path / "last.pt")


@pytest.mark.slow
def test_a_process_killed_during_a_save_leaves_the_previous_checkpoint_intact(tmp_path):
    path = tmp_path / "last.pt"
    save_checkpoint(payload(1.0), path)
    code = f"""
import io, os, signal, torch
import minitrans.core.checkpoint as checkpoint
real_save = torch.save
def half_then_die(obj, file):
    buffer = io.BytesIO()
    real_save(obj, buffer)
    file.write(buffer.getvalue()[: len(buffer.getvalue()) // 2])
    file.flush()
    os.kill(os.getpid(), signal.SIGKILL)
checkpoint.torch.save = half_then_die
checkpoint.save_checkpoint({{"model": {{"w": torch.zeros(1000)}}, "step": 2}}, {str(path)!r})
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert result.returncode == -9
    assert load_checkpoint(path)["step"] == 1  # the half-written file was never renamed over it


def test_loading_passes_weights_only_explicitly(tmp_path, monkeypatch):
    path = tmp_path / "last.pt"
    save_checkpoint(payload(1.0), path)
    calls = []
    real_load = torch.load
    monkeypatch.setattr(checkpoint.torch, "load", lambda *a, **k: calls.append(k) or real_load(*a, **k))
    load_checkpoint(path)
    assert calls and all(call.get("weights_only") is True for call in calls)


class Payload:
    """Unpickling this runs ``touch marker``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def malicious_checkpoint(tmp_path: Path, protocol: int = 2) -> tuple[Path, Path]:
    marker = tmp_path / "pwned"
    path = tmp_path / f"evil{protocol}.pt"
    torch.save(
        {"format": checkpoint.FORMAT, "version": 1, "model": {}, "evil": Payload(marker)},
        path,
        pickle_protocol=protocol,
    )
    return path, marker


@pytest.mark.parametrize("protocol", [2, 4])
@pytest.mark.parametrize("force_unsafe", [False, True])
def test_a_checkpoint_that_would_run_code_is_refused_without_running_it(tmp_path, monkeypatch, protocol, force_unsafe):
    if force_unsafe:  # torch honours it only where weights_only is not passed; we pass it
        monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    path, marker = malicious_checkpoint(tmp_path, protocol)
    with pytest.raises(CheckpointError, match="refused") as error:
        load_checkpoint(path)
    assert not marker.exists()
    assert "\n" not in str(error.value)


def test_torchs_own_safe_loader_is_a_second_line_of_defence(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    monkeypatch.setattr(checkpoint, "_unsafe_global", lambda data, path: None)  # without our own scan
    path, marker = malicious_checkpoint(tmp_path)
    with pytest.raises(CheckpointError, match=r"safe loader \(weights_only=True\)"):
        load_checkpoint(path)
    assert not marker.exists()


def test_the_scan_holds_even_if_torch_load_was_patched_to_unpickle_anything(tmp_path, monkeypatch):
    real_load = torch.load
    monkeypatch.setattr(checkpoint.torch, "load", lambda *a, **k: real_load(*a, **{**k, "weights_only": False}))
    path, marker = malicious_checkpoint(tmp_path)
    with pytest.raises(CheckpointError, match="posix.system|os.system|nt.system"):
        load_checkpoint(path)
    assert not marker.exists()


def truncated(path: Path, tmp_path: Path) -> Path:
    data = path.read_bytes()
    out = tmp_path / "truncated.pt"
    out.write_bytes(data[: len(data) // 2])
    return out


def flipped(path: Path, tmp_path: Path) -> Path:
    """One byte of the weights changed: the zip is whole but a member fails its CRC."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        info = next(i for i in archive.infolist() if "/data/" in i.filename)
    header = info.header_offset  # local header: 30 bytes, then the name and extra field
    name_length = int.from_bytes(data[header + 26 : header + 28], "little")
    extra_length = int.from_bytes(data[header + 28 : header + 30], "little")
    data[header + 30 + name_length + extra_length + 5] ^= 0xFF
    out = tmp_path / "flipped.pt"
    out.write_bytes(bytes(data))
    return out


def garbage(path: Path, tmp_path: Path) -> Path:
    out = tmp_path / "garbage.pt"
    out.write_bytes(os.urandom(3000))
    return out


def empty(path: Path, tmp_path: Path) -> Path:
    out = tmp_path / "empty.pt"
    out.write_bytes(b"")
    return out


def plain_pickle(path: Path, tmp_path: Path) -> Path:
    out = tmp_path / "plain.pkl"
    out.write_bytes(pickle.dumps({"format": checkpoint.FORMAT}))
    return out


def foreign(path: Path, tmp_path: Path) -> Path:
    out = tmp_path / "foreign.pt"
    torch.save({"weight": torch.zeros(2)}, out)
    return out


def missing(path: Path, tmp_path: Path) -> Path:
    return tmp_path / "nowhere.pt"


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (truncated, r"^{path} is truncated or corrupt \(File is not a zip file\)"),
        (flipped, r"^{path} is corrupt \(member \S+ fails its CRC check\)"),
        (garbage, r"^{path} is truncated or corrupt"),
        (empty, r"^{path} is truncated or corrupt"),
        (plain_pickle, r"^{path} is truncated or corrupt"),
        (foreign, r"^{path} is not a minitrans checkpoint"),
        (missing, r"^no checkpoint at {path}$"),
    ],
    ids=lambda value: getattr(value, "__name__", None),
)
def test_a_bad_file_gives_one_clear_line(tmp_path, damage, expected):
    good = tmp_path / "good.pt"
    save_checkpoint(payload(1.0), good)
    bad = damage(good, tmp_path)
    with pytest.raises(CheckpointError) as error:
        load_checkpoint(bad)
    message = str(error.value)
    assert "\n" not in message
    assert re.match(expected.format(path=re.escape(str(bad))), message), message


def test_a_torch_with_known_weights_only_holes_is_warned_about(tmp_path, monkeypatch):
    from torch.torch_version import TorchVersion

    path = tmp_path / "last.pt"
    save_checkpoint(payload(1.0), path)
    monkeypatch.setattr(checkpoint.torch, "__version__", TorchVersion("2.5.1"))
    with pytest.warns(UserWarning, match="CVE-2025-32434.*torch>=2.10"):
        load_checkpoint(path)


# -- the scan reads what torch reads, and refuses what it says it refuses ----------------------
def checkpoint_with(tmp_path: Path, name: str, value, protocol: int = 2) -> Path:
    path = tmp_path / f"{name}.pt"
    torch.save({"format": checkpoint.FORMAT, "version": 1, "model": {"w": value}}, path, pickle_protocol=protocol)
    return path


def pickle_of(path: Path) -> bytes:
    with zipfile.ZipFile(path) as archive:
        return archive.read(next(n for n in archive.namelist() if n.endswith("/data.pkl")))


def rewritten(source: Path, out: Path, rename: dict[str, tuple[str, bytes]]) -> Path:
    """A copy of ``source`` whose members named in ``rename`` become (new name, new bytes)."""
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(out, "w") as dst:
        for name in src.namelist():
            new_name, data = rename.get(name.split("/", 1)[1], (None, None))
            if new_name is None:
                dst.writestr(name, src.read(name))
            else:
                for extra_name, extra_data in ((new_name, data), *rename.get("+", [])):
                    dst.writestr(f"{name.split('/', 1)[0]}/{extra_name}", extra_data)
    return out


UNWANTED = {
    "set": lambda: {1, 2},
    "parameter": lambda: torch.nn.Parameter(torch.zeros(2)),
    "sparse": lambda: torch.sparse_coo_tensor(torch.tensor([[0, 5]]), torch.ones(2), (3,)),
}


@pytest.mark.parametrize("kind", sorted(UNWANTED))
@pytest.mark.parametrize("protocol", [2, 4])
def test_sets_parameters_and_sparse_tensors_are_refused(tmp_path, kind, protocol):
    path = checkpoint_with(tmp_path, kind, UNWANTED[kind](), protocol)
    with pytest.raises(CheckpointError, match="refused"):
        load_checkpoint(path)


@pytest.mark.parametrize("kind", sorted(UNWANTED))
def test_a_second_pickle_named_in_another_case_cannot_sidestep_the_scan(tmp_path, kind):
    """torch's zip reader finds ``DATA.PKL`` when asked for ``data.pkl``; the scan must read it."""
    good = tmp_path / "good.pt"
    save_checkpoint(payload(1.0), good)
    evil = pickle_of(checkpoint_with(tmp_path, kind, UNWANTED[kind]()))
    # the unwanted pickle as DATA.PKL, the good one moved where a naive scan would find it
    hidden = rewritten(good, tmp_path / "hidden.pt", {"data.pkl": ("DATA.PKL", evil), "+": [("x/data.pkl", b"")]})
    hidden_twin = rewritten(good, tmp_path / "twin.pt", {"data.pkl": ("DATA.PKL", evil), "+": [("data.pkl", b"")]})
    reader = torch._C.PyTorchFileReader(str(hidden))
    assert reader.get_record("data.pkl") == evil  # the premise: torch would load the unwanted pickle
    for path in (hidden, hidden_twin):
        with pytest.raises(CheckpointError, match="refused") as error:
            load_checkpoint(path)
        assert "\n" not in str(error.value)


def test_a_file_torch_would_read_as_a_legacy_pickle_is_refused(tmp_path):
    good = tmp_path / "good.pt"
    save_checkpoint(payload(1.0), good)
    prefixed = tmp_path / "prefixed.pt"  # zipfile still finds the archive at the end; torch would not look
    prefixed.write_bytes(pickle.dumps({"format": checkpoint.FORMAT, "x": {1}}, protocol=2) + good.read_bytes())
    with pytest.raises(CheckpointError, match="corrupt"):
        load_checkpoint(prefixed)


def test_empty_bytes_load(tmp_path):
    path = tmp_path / "last.pt"
    save_checkpoint({"tokenizer": {"src": b"", "tgt": b"\x00"}, "model": {}}, path)
    assert load_checkpoint(path)["tokenizer"] == {"src": b"", "tgt": b"\x00"}


# -- what mutation testing found unchecked (README, Development) ----------------------------
def test_an_empty_run_folder_names_every_checkpoint_it_looked_for(tmp_path):
    with pytest.raises(CheckpointError) as error:
        resolve_checkpoint(tmp_path)
    assert str(error.value) == f"no checkpoint in {tmp_path} (looked for checkpoints/{{averaged.pt,best.pt,last.pt}})"


def resaved(path: Path, out: Path, edit) -> Path:
    """``path``'s payload, edited, written back by plain torch.save (the digest left as it was)."""
    payload = torch.load(path, weights_only=True)
    edit(payload)
    torch.save(payload, out)
    return out


def test_the_model_config_digest_ignores_key_order_and_catches_an_edit(tmp_path):
    """A config written back with its keys in another order (a tool, a JSON round trip, a
    dataclass whose fields moved) is the same config; a changed value is not."""
    path = tmp_path / "last.pt"
    model = {"kind": "transformer", "d_model": 32, "num_heads": 2, "d_k": None}
    save_checkpoint({"config": {"model": model}, "model": {}}, path)
    assert load_checkpoint(path)["model_config_sha256"] == model_config_sha256_by_hand(model)

    def reorder(payload):
        payload["config"]["model"] = dict(reversed(payload["config"]["model"].items()))

    reordered = resaved(path, tmp_path / "reordered.pt", reorder)
    assert list(torch.load(reordered, weights_only=True)["config"]["model"]) == list(reversed(model))  # the premise
    assert load_checkpoint(reordered)["config"]["model"] == model

    edited = resaved(path, tmp_path / "edited.pt", lambda payload: payload["config"]["model"].update(num_heads=4))
    with pytest.raises(CheckpointError, match=r"model config is not the one its weights were saved with"):
        load_checkpoint(edited)


def model_config_sha256_by_hand(model: dict) -> str:
    """The documented digest: SHA-256 of the model config as JSON with sorted keys, written out."""
    import hashlib

    text = "{" + ", ".join(f'"{key}": {json_value(model[key])}' for key in sorted(model)) + "}"
    return hashlib.sha256(text.encode()).hexdigest()


def json_value(value) -> str:
    return "null" if value is None else f'"{value}"' if isinstance(value, str) else str(value)


def test_a_pickle_naming_objects_by_stack_global_is_refused_and_says_so(tmp_path):
    path, marker = malicious_checkpoint(tmp_path, protocol=4)  # protocol 4 names objects with STACK_GLOBAL
    with pytest.raises(CheckpointError) as error:
        load_checkpoint(path)
    assert str(error.value) == (
        f"{path} was refused: its pickle refers to an object named by STACK_GLOBAL, which a checkpoint never needs"
    )
    assert not marker.exists()


@pytest.mark.parametrize("name", ["FloatStorage", "float32"])
def test_a_torch_name_from_another_module_is_refused_by_the_scan(tmp_path, name):
    """Storage classes and dtypes are allowed only from ``torch`` itself: ``os.FloatStorage``
    (a hand-made pickle) is refused by the scan, before torch's loader sees the file."""
    good = tmp_path / "good.pt"
    save_checkpoint(payload(1.0), good)
    crafted = b"\x80\x02cos\n" + name.encode() + b"\nq\x00."  # protocol 2: GLOBAL 'os <name>', STOP
    path = rewritten(good, tmp_path / "crafted.pt", {"data.pkl": ("data.pkl", crafted)})
    with pytest.raises(CheckpointError) as error:
        load_checkpoint(path)
    assert str(error.value) == f"{path} was refused: its pickle refers to os.{name}, which a checkpoint never needs"


def test_a_damaged_pickle_in_a_whole_archive_is_named_corrupt_in_one_line(tmp_path):
    """CRCs that hold over a pickle cut in half (the archive was rewritten whole): the scan's
    reader meets the end first, and says what it met."""
    good = tmp_path / "good.pt"
    save_checkpoint(payload(1.0), good)
    cut = pickle_of(good)[: len(pickle_of(good)) // 2]
    path = rewritten(good, tmp_path / "cut.pt", {"data.pkl": ("data.pkl", cut)})
    with pytest.raises(CheckpointError) as error:
        load_checkpoint(path)
    assert str(error.value) == f"{path} is truncated or corrupt (ValueError); it cannot be loaded"


# -- defence in depth: the scan alone refuses what would run code -------------------------------
def test_the_scans_allow_list_is_pinned_exactly():
    """A global added to the allow-list (or an opcode let through) must be a reviewed change:
    this test fails until it is updated with it."""
    assert checkpoint._ALLOWED_GLOBALS == {
        ("collections", "OrderedDict"),
        ("_codecs", "encode"),
        ("torch", "Size"),
        ("torch", "device"),
        ("torch._utils", "_rebuild_tensor_v2"),
        ("__builtin__", "bytes"),
        ("builtins", "bytes"),
    }
    assert checkpoint._NAMING_OPCODES == {"GLOBAL", "STACK_GLOBAL", "INST", "EXT1", "EXT2", "EXT4"}
    assert checkpoint._REFUSED_OPCODES == {"EMPTY_SET", "ADDITEMS", "FROZENSET", "OBJ", "NEWOBJ", "NEWOBJ_EX"}
    # beyond the list, only torch's storage classes and dtypes, and only from torch itself
    storages = {name for name in dir(torch) if name.endswith("Storage")}
    dtypes = {name for name in dir(torch) if isinstance(getattr(torch, name), torch.dtype)}
    assert {name for name in dir(torch) if checkpoint._is_allowed("torch", name)} == {
        "Size",
        "device",
    } | storages | dtypes
    import builtins
    import importlib

    expected = {
        "builtins": {"bytes"},
        "__builtin__": {"bytes"},
        "collections": {"OrderedDict"},
        "_codecs": {"encode"},
        "torch._utils": {"_rebuild_tensor_v2"},
    }
    for module in [*expected, "os", "posix", "subprocess", "importlib", "sys", "pickle", "shutil", "io"]:
        namespace = builtins if module == "__builtin__" else importlib.import_module(module)
        names = set(dir(namespace)) | {"eval", "exec", "getattr", "system", "Popen", "import_module"}
        allowed = {name for name in names if checkpoint._is_allowed(module, name)}
        assert allowed == expected.get(module, set()), module


# Protocol-2 pickles as an attacker would write them: GLOBAL 'module name', MARK, arguments,
# TUPLE, REDUCE (call it), STOP. Each, unpickled, calls its global.
def crafted(module: str, name: str, *args: str) -> bytes:
    arguments = b"".join(b"V" + arg.encode("raw_unicode_escape") + b"\n" for arg in args)
    return b"\x80\x02c" + f"{module}\n{name}\n".encode() + b"(" + arguments + b"tR."


def attacks(marker: Path) -> dict[str, bytes]:
    touch = f"open({str(marker)!r}, 'w').close()"
    return {
        "builtins.eval": crafted("builtins", "eval", touch),
        "builtins.exec": crafted("builtins", "exec", touch),
        "builtins.getattr": crafted("builtins", "getattr", "abc", "upper"),
        "os.system": crafted("os", "system", f"touch {marker}"),
        "subprocess.Popen": crafted("subprocess", "Popen", f"touch {marker}"),  # a str: the shell's argv[0] path
        "importlib.import_module": crafted("importlib", "import_module", "antigravity_never_imported"),
    }


def test_crafted_pickles_are_live_code(tmp_path):
    """The premise of the next test: unpickled without any scan, these run."""
    marker = tmp_path / "ran"
    for name in ("builtins.eval", "builtins.exec"):
        pickle.loads(attacks(marker)[name])
        assert marker.exists(), name
        marker.unlink()
    assert pickle.loads(attacks(marker)["builtins.getattr"])() == "ABC"
    with pytest.raises(ModuleNotFoundError, match="antigravity_never_imported"):
        pickle.loads(attacks(marker)["importlib.import_module"])


@pytest.mark.parametrize(
    "name",
    ["builtins.eval", "builtins.exec", "builtins.getattr", "os.system", "subprocess.Popen", "importlib.import_module"],
)
def test_the_scan_alone_refuses_pickles_that_call_code(tmp_path, monkeypatch, name):
    """torch's loader is bypassed (any call to it fails the test): the scan must refuse first."""

    def reached(*args, **kwargs):
        raise AssertionError("torch.load was reached: the scan let the pickle through")

    monkeypatch.setattr(checkpoint.torch, "load", reached)
    good = tmp_path / "good.pt"
    save_checkpoint(payload(1.0), good)
    marker = tmp_path / "ran"
    path = rewritten(good, tmp_path / "crafted.pt", {"data.pkl": ("data.pkl", attacks(marker)[name])})
    with pytest.raises(CheckpointError) as error:
        load_checkpoint(path)
    assert str(error.value) == f"{path} was refused: its pickle refers to {name}, which a checkpoint never needs"
    assert not marker.exists()
