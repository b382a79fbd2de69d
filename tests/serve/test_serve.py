"""The web app's JSON API (minitrans.serve.app) through FastAPI's test client, and scripts/serve.py:
translations are the Translator's, attention has the model's shapes, every bad request is a 4xx
with one line of JSON, the size caps hold, and model access is serialised."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

pytest.importorskip("fastapi", reason='the web app\'s extra is not installed: pip install -e ".[demo]"')
pytest.importorskip("httpx", reason="FastAPI's test client needs httpx")

from fastapi.testclient import TestClient  # noqa: E402
from helpers import REPO
from helpers.checkpoints import SRC, build_checkpoint  # noqa: E402

from minitrans.core.decoding_options import DecodingOptions  # noqa: E402
from minitrans.inference.coverage import TrainingRecord  # noqa: E402
from minitrans.inference.lines import CUT_OUTPUT, translate_lines  # noqa: E402
from minitrans.inference.translator import Translator  # noqa: E402
from minitrans.serve.app import Limits, ServedModel, create_app  # noqa: E402

SERVE = REPO / "scripts" / "serve.py"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Tiny untrained models of each family (2 heads, 1 encoder + 2 decoder layers), as run folders."""
    root = tmp_path_factory.mktemp("serve")
    folders = {}
    for kind in ("transformer", "rnn_attention", "rnn"):
        folders[kind] = root / kind
        build_checkpoint(folders[kind] / "checkpoints" / "best.pt", kind, max_len=32)
    return folders


@pytest.fixture(scope="module")
def models(runs) -> dict[str, ServedModel]:
    return {kind: ServedModel.load(folder, "cpu") for kind, folder in runs.items()}


@pytest.fixture(scope="module")
def client(models) -> TestClient:
    app = create_app([models["transformer"], models["rnn"]], Limits(max_sentences=4, max_chars=200, max_beam=5))
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client


def post(client: TestClient, **body):
    return client.post("/translate", json=body)


def assert_one_line_error(response, status: int, *fragments: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert list(body) == ["error"] and "\n" not in body["error"] and body["error"]
    assert "Traceback" not in response.text
    for fragment in fragments:
        assert fragment in body["error"]


# -- translation ----------------------------------------------------------------------------
def test_translations_are_the_translators_for_every_model_in_order(client, runs):
    sentences = [SRC[0], "", SRC[1]]
    for beam in (1, 3):
        body = post(client, sentences=sentences, beam=beam).json()
        assert [m["name"] for m in body["models"]] == ["transformer", "rnn"]
        for answer, kind in zip(body["models"], ("transformer", "rnn")):
            expected = Translator.from_checkpoint(runs[kind], "cpu").translate(
                sentences, DecodingOptions(beam_size=beam)
            )
            got = [t["text"] for t in answer["translations"]]
            assert got == expected and got[1] == "" and all(got[::2])
            assert [t["source"] for t in answer["translations"]] == sentences
            assert all(t["attention"] is None for t in answer["translations"])  # not asked for
            assert [len(t["hypotheses"]) for t in answer["translations"]] == [1, 0, 1]  # a blank has none
            assert [t["source_pieces"] == [] for t in answer["translations"]] == [False, True, False]


def test_nbest_lists_the_translators_best_hypotheses_with_their_scores(client, runs):
    sentences = [SRC[0], "", SRC[2]]
    body = post(client, sentences=sentences, beam=4, nbest=3, length_penalty=1.0, models=["transformer"]).json()
    expected = Translator.from_checkpoint(runs["transformer"], "cpu").translate_nbest(
        sentences, DecodingOptions(beam_size=4, length_penalty=1.0), nbest=3
    )
    for result, translations in zip(body["models"][0]["translations"], expected):
        hyps = result["hypotheses"]
        assert [h["text"] for h in hyps] == [t.text for t in translations]
        assert [h["score"] for h in hyps] == pytest.approx([t.score for t in translations])
        assert [h["log_prob"] for h in hyps] == pytest.approx([t.log_prob for t in translations])
        assert [h["score"] for h in hyps] == sorted((h["score"] for h in hyps), reverse=True)  # best first
        if hyps:
            assert len(hyps) == 3 and result["text"] == hyps[0]["text"] and hyps[0]["score"] < 0


def test_one_model_can_be_picked_by_name(client):
    body = post(client, sentences=[SRC[0]], models=["rnn"]).json()
    assert [m["name"] for m in body["models"]] == ["rnn"]
    assert_one_line_error(post(client, sentences=[SRC[0]], models=["nope"]), 422, "no model named 'nope'")


def test_info_describes_each_models_attention(client):
    info = client.get("/info").json()
    assert [(m["name"], m["kind"]) for m in info["models"]] == [("transformer", "transformer"), ("rnn", "rnn")]
    assert info["models"][0]["attention"] == {
        "enc_self": {"layers": 1, "heads": 2},
        "dec_self": {"layers": 2, "heads": 2},
        "cross": {"layers": 2, "heads": 2},
    }
    assert info["models"][1]["attention"] == {}  # one context vector C: nothing to draw
    assert info["limits"] == {
        "max_sentences": 4, "max_chars": 200, "max_beam": 5, "max_attention_cells": Limits.max_attention_cells
    }  # fmt: skip


# -- attention ------------------------------------------------------------------------------
def test_attention_has_a_map_per_kind_layer_and_head_shaped_by_its_tokens(client):
    body = post(client, sentences=[SRC[2], "  "], attention=True).json()
    transformer, rnn = body["models"]
    result = transformer["translations"][0]
    attention = result["attention"]
    src, tgt_in, tgt_out = attention["src_tokens"], attention["tgt_in_tokens"], attention["tgt_out_tokens"]
    assert src[-1] == "</s>" and tgt_in[0] == "<s>" and tgt_out[-1] == "</s>" and tgt_in[1:] == tgt_out[:-1]
    assert attention["axes"] == {
        "enc_self": ["src_tokens", "src_tokens"],
        "dec_self": ["tgt_in_tokens", "tgt_in_tokens"],
        "cross": ["tgt_out_tokens", "src_tokens"],
    }
    layers = {"enc_self": 1, "dec_self": 2, "cross": 2}
    for kind, maps in attention["maps"].items():
        rows, cols = (len(attention[axis]) for axis in attention["axes"][kind])
        assert len(maps) == layers[kind]
        for layer in maps:
            assert len(layer) == 2  # heads
            for head in layer:
                assert len(head) == rows and all(len(row) == cols for row in head)
                assert all(abs(sum(row) - 1) < 1e-3 for row in head)  # softmax rows, rounded to 4 decimals
                if kind == "dec_self":  # masked: nothing from the future
                    assert all(w == 0 for r, row in enumerate(head) for w in row[r + 1 :])
    # each head's role on this sentence, named from its own map (scripts/heads.py's thresholds)
    roles = attention["roles"]
    assert {kind: [len(layer) for layer in layers] for kind, layers in roles.items()} == {
        kind: [len(layer) for layer in maps] for kind, maps in attention["maps"].items()
    }
    for kind, layers in roles.items():
        for layer, heads in enumerate(layers):
            for head, role in enumerate(heads):
                assert "alignment" not in role  # no gold for this corpus
                if kind == "cross":
                    assert role == ""
                    continue
                weights = attention["maps"][kind][layer][head]
                previous = sum(weights[r][r - 1] for r in range(1, len(weights))) / max(len(weights) - 1, 1)
                assert ("previous-token" in role) == (previous >= 0.5)
    assert transformer["translations"][1]["attention"] is None  # a blank sentence has nothing to draw
    assert rnn["translations"][0]["attention"]["maps"] == {}


def test_attention_is_the_translators_own_export(models, runs):
    """The API's maps are Translator.attention of the translation it returned, rounded."""
    app = create_app([models["rnn_attention"]])
    with TestClient(app) as client:
        result = post(client, sentences=[SRC[1]], attention=True, beam=2).json()["models"][0]["translations"][0]
    translator = models["rnn_attention"].translator
    ids = translator.translate_encoded(translator.encode([SRC[1]]), DecodingOptions(beam_size=2))[0]
    expected = translator.attention(translator.encode([SRC[1]])[0], ids)
    assert list(result["attention"]["maps"]) == ["cross"]
    got = result["attention"]["maps"]["cross"]
    assert len(got) == 1 and len(got[0]) == 1  # one layer, one "head": the additive alignment
    torch.testing.assert_close(
        torch.tensor(got[0][0], dtype=torch.float64), expected.maps["cross"][0][0].double(), atol=6e-5, rtol=0
    )
    assert result["attention"]["src_tokens"] == expected.src_tokens


def test_a_sentence_cut_to_the_models_length_comes_with_a_warning(client):
    long = " ".join([SRC[0]] * 12)
    body = post(client, sentences=[long[:200]], models=["transformer"], attention=True).json()
    warnings = body["models"][0]["warnings"]
    assert [w for w in warnings if "max_len=32" in w] == [warnings[0]] and warnings[0].startswith("sentence 1: ")
    attention = body["models"][0]["translations"][0]["attention"]
    assert len(attention["src_tokens"]) == 32  # the model's max_len


def test_each_model_decodes_as_its_run_did_unless_a_request_says_otherwise(tmp_path):
    """A run trained with trainer.length_penalty=2 and max_output_ratio=0.5 is served with them
    (as translate.py translates it); a request's length penalty overrides the run's, and the
    answer says so."""
    from minitrans.core.checkpoint import load_checkpoint, save_checkpoint

    best = build_checkpoint(tmp_path / "tuned" / "checkpoints" / "best.pt", max_len=32)
    payload = load_checkpoint(best)
    payload["config"]["trainer"] |= {"length_penalty": 2.0, "max_output_ratio": 0.5}
    save_checkpoint(payload, best)
    own = DecodingOptions(beam_size=4, length_penalty=2.0, max_output_ratio=0.5)
    expected = Translator.from_checkpoint(best, "cpu").translate([SRC[0], SRC[2]], own)
    with TestClient(create_app([ServedModel.load(best, "cpu")])) as client:
        info = client.get("/info").json()["models"][0]
        assert info["decoding"] == {"length_penalty": 2.0, "max_output_ratio": 0.5}
        answer = post(client, sentences=[SRC[0], SRC[2]], beam=4).json()["models"][0]
        assert [t["text"] for t in answer["translations"]] == expected
        assert answer["decoding"] == {"beam_size": 4, "length_penalty": 2.0, "max_output_ratio": 0.5}
        assert [w for w in answer["warnings"] if not w.endswith(CUT_OUTPUT)] == []  # tiny model: cuts allowed
        told = post(client, sentences=[SRC[0]], beam=4, length_penalty=0.6).json()["models"][0]
        assert told["decoding"]["length_penalty"] == 0.6
        assert [w for w in told["warnings"] if not w.endswith(CUT_OUTPUT)] == [
            "decoding with length penalty 0.6, not the run's own 2 (trainer.length_penalty)"
        ]


def test_a_length_penalty_that_is_not_a_number_is_named_as_such(client):
    headers = {"content-type": "application/json"}
    for value in (b"NaN", b"Infinity"):
        body = b'{"sentences": ["x"], "length_penalty": ' + value + b"}"
        response = client.post("/translate", content=body, headers=headers)
        assert_one_line_error(response, 422, "length_penalty", "finite number")
        assert "less than or equal" not in response.json()["error"]


# -- errors and limits ----------------------------------------------------------------------
def test_bad_requests_get_a_4xx_with_one_line_of_json(client):
    assert_one_line_error(client.post("/translate", json={}), 422, "sentences", "required")
    assert_one_line_error(post(client, sentences="a sentence"), 422, "sentences")
    assert_one_line_error(post(client, sentences=[1, 2]), 422, "sentences.0")
    assert_one_line_error(post(client, sentences=[]), 422, "at least one sentence")
    assert_one_line_error(post(client, sentences=["x"], beam=0), 422, "beam")
    assert_one_line_error(post(client, sentences=["x"], length_penalty=-1), 422, "length_penalty")
    assert_one_line_error(post(client, sentences=["x"], bean=3), 422, "bean")
    assert_one_line_error(post(client, sentences=["x"], beam=2, nbest=3), 422, "nbest 3 is more than beam 2")
    headers = {"content-type": "application/json"}
    assert_one_line_error(client.post("/translate", content=b'{"sentences": [', headers=headers), 422, "JSON")
    assert_one_line_error(client.post("/translate", content=b"\xff\xfe", headers=headers), 422)
    assert_one_line_error(client.get("/translate"), 405)
    assert_one_line_error(client.get("/nowhere"), 404)


def test_requests_over_the_limits_get_413_saying_which_limit(client):
    assert_one_line_error(post(client, sentences=["x"] * 5), 413, "5 sentences", "at most 4")
    assert_one_line_error(post(client, sentences=["ok", "y" * 201]), 413, "sentence 2 has 201 characters", "200")
    assert_one_line_error(post(client, sentences=["x"], beam=6), 413, "beam 6", "at most 5")
    body = json.dumps({"sentences": ["x"], "padding": "z" * 1_000_001})
    response = client.post("/translate", content=body, headers={"content-type": "application/json"})
    assert_one_line_error(response, 413, "bytes")


def test_an_unexpected_failure_is_a_500_with_one_line_and_no_traceback(models, monkeypatch):
    translator = models["transformer"].translator

    def broken(*args, **kwargs):
        raise RuntimeError("secret internals\nline two")

    monkeypatch.setattr(translator, "search_encoded", broken)
    with TestClient(create_app([models["transformer"]]), raise_server_exceptions=False) as client:
        response = post(client, sentences=["x"])
    assert_one_line_error(response, 500, "internal error (RuntimeError)")
    assert "secret" not in response.text


def test_concurrent_requests_are_served_one_at_a_time_and_correctly(models, monkeypatch):
    translator = models["transformer"].translator
    expected = {s: translator.translate([s])[0] for s in SRC[:3]}
    original, active, most = translator.search_encoded, [0], [0]
    guard = threading.Lock()

    def tracked(*args, **kwargs):
        with guard:
            active[0] += 1
            most[0] = max(most[0], active[0])
        time.sleep(0.02)
        try:
            return original(*args, **kwargs)
        finally:
            with guard:
                active[0] -= 1

    monkeypatch.setattr(translator, "search_encoded", tracked)
    with TestClient(create_app([models["transformer"]])) as client:
        with ThreadPoolExecutor(6) as pool:
            replies = list(pool.map(lambda s: (s, post(client, sentences=[s]).json()), SRC[:3] * 4))
    assert most[0] == 1  # 12 requests from 6 threads, never two searches at once
    for sentence, reply in replies:
        assert reply["models"][0]["translations"][0]["text"] == expected[sentence]


def test_the_page_is_served_and_calls_the_api(client):
    response = client.get("/")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    assert "minitrans" in response.text and 'fetch("translate"' in response.text and 'fetch("info")' in response.text


def test_model_names_must_differ(models):
    with pytest.raises(ValueError, match="must differ"):
        create_app([models["rnn"], models["rnn"]])


# -- scripts/serve.py -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("serve_script", SERVE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def error_lines(capsys) -> list[str]:
    return capsys.readouterr().err.strip().splitlines()


def test_script_without_the_web_extra_says_how_to_install_it(script, runs, monkeypatch, capsys):
    monkeypatch.delitem(sys.modules, "minitrans.serve.app")
    monkeypatch.setitem(sys.modules, "fastapi", None)  # as if it were not installed
    assert script.main([str(runs["rnn"]), "--port", "0"]) == 1
    assert error_lines(capsys) == ['error: the web app needs fastapi: pip install -e ".[demo]"']


def test_script_refuses_a_missing_or_bad_checkpoint_in_one_line(script, tmp_path, capsys):
    (tmp_path / "bad.pt").write_bytes(b"not a checkpoint")
    for path, message in ((tmp_path / "missing", "no checkpoint at"), (tmp_path / "bad.pt", "truncated or corrupt")):
        assert script.main([str(path), "--port", "0"]) == 1
        lines = error_lines(capsys)
        assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]
    with pytest.raises(SystemExit) as exit_info:
        script.main(["a", "b", "c"])
    assert exit_info.value.code == 2 and "one run, or two" in capsys.readouterr().err


def test_script_refuses_a_busy_port_in_one_line(script, runs, capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        assert script.main([str(runs["rnn"]), "--port", str(busy.getsockname()[1])]) == 1
    lines = error_lines(capsys)
    assert len(lines) == 1 and lines[0].startswith("error: cannot listen on 127.0.0.1:")
    assert lines[0].endswith("(--port 0 picks a free one; mkdocs serve also uses 8000)")


@pytest.mark.slow
def test_script_serves_two_runs_on_localhost_until_ctrl_c(runs):
    process = subprocess.Popen(
        [sys.executable, str(SERVE), str(runs["transformer"]), str(runs["rnn"]), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        line = process.stdout.readline().strip()
        assert line.startswith("minitrans: serving transformer (transformer) and rnn (rnn) at http://127.0.0.1:")
        url = line.split(" at ")[1].split()[0]
        request = urllib.request.Request(
            url + "/translate", json.dumps({"sentences": [SRC[0]]}).encode(), {"content-type": "application/json"}
        )
        reply = json.load(urllib.request.urlopen(request, timeout=30))
        assert [m["name"] for m in reply["models"]] == ["transformer", "rnn"]
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 130
    finally:
        process.kill()
        process.wait()


# -- one schema, the words a model has not seen, the language direction -------------------------
@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> ServedModel:
    """A German -> English model whose checkpoint records the words it was trained on."""
    folder = tmp_path_factory.mktemp("recorded")
    record = TrainingRecord.from_sentences(SRC, "de", "en", "multi30k")
    build_checkpoint(folder / "checkpoints" / "best.pt", max_len=32, extra={"training_data": record.to_state()})
    return ServedModel.load(folder, "cpu")


def test_each_translation_is_the_python_apis_line_result_in_the_jsonl_schema(recorded):
    sentences = [SRC[0], "", "ein zebra liest ."]
    with TestClient(create_app([recorded])) as client:
        answer = post(client, sentences=sentences, beam=3, nbest=2).json()["models"][0]
    expected = translate_lines(recorded.translator, sentences, DecodingOptions(beam_size=3), nbest=2, split=False)
    for got, line in zip(answer["translations"], expected):
        assert got.pop("attention") is None
        want = json.loads(json.dumps(line.to_json()))  # as translate.py --format jsonl writes it
        for hyp in want["hypotheses"]:
            hyp["alignment"] = None  # attention not asked for: no alignment pass
        assert got.keys() == want.keys() and "text" in got and "translation" not in got
        for hyp in got["hypotheses"]:
            assert hyp.keys() == {"text", "pieces", "score", "log_prob", "alignment", "is_finished"}
        assert got == want


def test_the_api_names_words_the_model_has_not_seen_as_translate_py_does(recorded):
    with TestClient(create_app([recorded])) as client:
        answer = post(client, sentences=[SRC[0], "ein zebra liest ein buch ."]).json()["models"][0]
    uncut = [w for w in answer["warnings"] if not w.endswith(CUT_OUTPUT)]  # an untrained model may run to the limit
    assert [w for w in answer["translations"][0]["warnings"] if w != CUT_OUTPUT] == []
    assert answer["translations"][0]["unseen_words"] == [] and answer["translations"][1]["unseen_words"] == ["zebra"]
    assert uncut == ["sentence 2: words never seen in training: zebra"]


def test_info_and_the_page_say_the_language_direction(recorded, client):
    with TestClient(create_app([recorded])) as own:
        (model,) = own.get("/info").json()["models"]
        page = own.get("/").text
    assert model["languages"] == {"source": "de", "target": "en", "direction": "German → English"}
    assert 'id="direction"' in page and "languages.direction" in page


def test_a_body_that_is_not_json_gets_a_message_that_says_so(client):
    headers = {"content-type": "application/json"}
    for body in (b"sentences=hello", b'{"sentences": [', b"\xff\xfe"):
        response = client.post("/translate", content=body, headers=headers)
        assert_one_line_error(response, 422, "not valid JSON", '{"sentences": ["a sentence"]}')
        assert not response.json()["error"].startswith("0:")


# -- round three: work and answers bounded, bad text refused ------------------------------------
def test_a_model_named_many_times_is_translated_once(models, monkeypatch):
    translator, calls = models["transformer"].translator, []
    original = translator.search_encoded
    monkeypatch.setattr(translator, "search_encoded", lambda *a, **k: calls.append(1) or original(*a, **k))
    with TestClient(create_app([models["transformer"], models["rnn"]])) as client:
        body = post(client, sentences=[SRC[0]], models=["transformer"] * 20 + ["rnn", "transformer"]).json()
    assert [m["name"] for m in body["models"]] == ["transformer", "rnn"] and len(calls) == 1


def test_attention_over_the_per_request_cap_is_a_413_that_names_it(models):
    limits = Limits(max_attention_cells=2_000)
    with TestClient(create_app([models["transformer"]], limits)) as client:
        response = post(client, sentences=[SRC[0], SRC[1]], attention=True)
        assert_one_line_error(response, 413, "attention maps would hold", "at most 2,000", "--max-attention-cells")
        assert post(client, sentences=[SRC[0], SRC[1]]).status_code == 200  # without maps: no cap
        small = post(client, sentences=["mann"], attention=True).json()["models"][0]["translations"][0]
    model = models["transformer"]
    maps = small["attention"]["maps"].values()
    counted = sum(len(head) * len(head[0]) for layers in maps for layer in layers for head in layer)
    cells = model.attention_cells(translate_lines(model.translator, ["mann"], split=False)[0])
    assert counted == cells <= 2_000  # the cap counts exactly the weights sent


def test_a_lone_surrogate_is_a_422_not_a_500(client):
    body = b'{"sentences": ["dog \\ud800 cat"]}'
    response = client.post("/translate", content=body, headers={"content-type": "application/json"})
    assert_one_line_error(response, 422, "sentence 1 is not valid Unicode", "character 5")


def test_a_partial_body_is_answered_408_and_its_connection_closed_by_a_real_server(models):
    """uvicorn on 127.0.0.1, port 0; clients that stop sending half-way do not hold connections."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    app = create_app([models["rnn"]], Limits(body_timeout=0.5))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.started
        port = sock.getsockname()[1]
        clients = []
        for _ in range(5):
            client = socket.create_connection(("127.0.0.1", port), timeout=10)
            client.sendall(
                b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b'Content-Length: 100\r\n\r\n{"sentences": ['
            )
            clients.append(client)
        started = time.monotonic()
        for client in clients:
            reply = b""
            while chunk := client.recv(4096):  # the server closes the connection after its answer
                reply += chunk
            client.close()
            assert reply.startswith(b"HTTP/1.1 408") and b"not received within 0.5 s" in reply
        assert time.monotonic() - started < 8
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/translate", json.dumps({"sentences": [SRC[0]]}).encode(),
            {"content-type": "application/json"},
        )  # fmt: skip
        reply = json.load(urllib.request.urlopen(request, timeout=30))  # a whole body is still served
        assert reply["models"][0]["translations"][0]["source"] == SRC[0]
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def test_the_page_gets_its_cjk_font_from_the_server(client):
    page = client.get("/").text
    assert 'src: url(/font/cjk) format("collection")' in page and "unicode-range:" in page
    font = client.get("/font/cjk")
    assert font.status_code == 200 and font.headers["content-type"] == "font/collection"
    assert font.content[:4] == b"ttcf"  # a TrueType/OpenType collection: Noto Sans CJK


def test_without_the_font_package_the_font_is_a_404_not_a_crash(client, monkeypatch):
    import minitrans.serve.app as app_module

    monkeypatch.setattr(app_module, "shipped_cjk_font", lambda: None)
    assert_one_line_error(client.get("/font/cjk"), 404, "no CJK font is installed here")


def documented_keys(text: str) -> list[str]:
    return re.findall(r'"(\w+)"', text)


def test_the_answer_has_exactly_the_keys_docs_explorer_md_documents(client):
    """The docs' one-line schema of POST /translate, read from docs/explorer.md, against a real answer."""
    doc = " ".join((REPO / "docs" / "explorer.md").read_text(encoding="utf-8").split())
    schema = re.search(r'`\{"models": \[\{(.+?)\}\]\}\]\}`', doc).group(1)
    model_keys, translation_keys = schema.split('"translations": [{')
    hypothesis_keys = re.search(r"each `\{(.+?)\}`", doc).group(1)
    attention_keys = re.search(r"`attention` \(of the best translation\) is `\{(.+?)\}`", doc).group(1)
    body = post(client, sentences=[SRC[0]], beam=2, nbest=2, attention=True, models=["transformer"]).json()
    model = body["models"][0]
    translation = model["translations"][0]
    assert set(model) == set(documented_keys(model_keys)) | {"translations"}
    assert set(translation) == set(documented_keys(translation_keys))
    assert set(translation["hypotheses"][0]) == set(documented_keys(hypothesis_keys))
    assert set(translation["attention"]) == set(documented_keys(attention_keys))


def test_a_json_body_sent_as_text_plain_is_told_its_content_type(client):
    body = json.dumps({"sentences": [SRC[0]]})
    response = client.post("/translate", content=body, headers={"content-type": "text/plain"})
    assert_one_line_error(response, 415, "content-type: application/json (got text/plain)")
    charset = {"content-type": "application/json; charset=utf-8"}
    assert client.post("/translate", content=body, headers=charset).status_code == 200


def test_a_model_without_the_causal_mask_is_said_to_cheat_in_every_answer(tmp_path):
    from minitrans.core.checkpoint import load_checkpoint, save_checkpoint

    best = build_checkpoint(tmp_path / "cheat" / "checkpoints" / "best.pt", max_len=32)
    payload = load_checkpoint(best)
    payload["config"]["model"]["causal_mask"] = False
    save_checkpoint(payload, best)
    with TestClient(create_app([ServedModel.load(best, "cpu")])) as client:
        warnings = post(client, sentences=[SRC[0]]).json()["models"][0]["warnings"]
    assert [w for w in warnings if "model.causal_mask=false" in w and "cheats" in w] == [warnings[0]]
