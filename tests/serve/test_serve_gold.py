"""The web app's gold alignments (minitrans.serve.gold through the JSON API): a run of the
generated corpus offers its test sentences; a picked one comes back with its gold links on the
cross-attention maps' pieces and each head's AER, measured as the alignment module measures it;
nothing for a sentence not in the corpus, another corpus, or a model without cross-attention."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason='the web app\'s extra is not installed: pip install -e ".[demo]"')
pytest.importorskip("httpx", reason="FastAPI's test client needs httpx")

from fastapi.testclient import TestClient  # noqa: E402
from helpers.checkpoints import SRC, build_checkpoint  # noqa: E402

from minitrans.analysis.alignment import aer, as_links, gold_split, piece_words, word_alignments  # noqa: E402
from minitrans.core.config import DataConfig  # noqa: E402
from minitrans.serve.app import ServedModel, create_app  # noqa: E402

DATA = DataConfig(name="generated", src_lang="de", tgt_lang="en", num_valid=4, num_test=6, min_words=4, max_words=8)


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> dict[str, ServedModel]:
    root = tmp_path_factory.mktemp("gold")
    runs = {
        "generated": build_checkpoint(root / "generated" / "checkpoints" / "best.pt", max_len=128, data=DATA),
        "rnn_attention": build_checkpoint(
            root / "rnn_attention" / "checkpoints" / "best.pt", "rnn_attention", max_len=128, data=DATA
        ),
        "rnn": build_checkpoint(root / "rnn" / "checkpoints" / "best.pt", "rnn", max_len=128, data=DATA),
        "multi30k": build_checkpoint(root / "multi30k" / "checkpoints" / "best.pt", max_len=128),
    }
    return {name: ServedModel.load(path.parents[1], "cpu", name=name) for name, path in runs.items()}


def translate(models, sentence: str) -> dict[str, dict]:
    with TestClient(create_app(models)) as client:
        reply = client.post("/translate", json={"sentences": [sentence], "attention": True}).json()
    return {answer["name"]: answer["translations"][0]["attention"] for answer in reply["models"]}


def test_the_corpus_offers_the_test_sentences_of_generated_runs_only(served):
    pairs = gold_split(DATA, "test")
    with TestClient(create_app([served["multi30k"], served["generated"], served["rnn"]])) as client:
        corpus = client.get("/corpus").json()
        info = client.get("/info").json()
    assert corpus == {"split": "test", "sentences": [source for source, _, _ in pairs], "models": ["generated"]}
    assert [m["gold"] for m in info["models"]] == [False, True, False]  # the fixed-context RNN: no attention
    with TestClient(create_app([served["multi30k"]])) as client:
        assert client.get("/corpus").json() == {"split": "test", "sentences": [], "models": []}


def test_a_picked_test_sentence_comes_back_with_its_gold_links_and_each_heads_aer(served):
    source, reference, gold_links = gold_split(DATA, "test")[0]
    answers = translate([served["generated"], served["rnn_attention"]], source)
    for name, shape in (("generated", (2, 2)), ("rnn_attention", (1, 1))):
        attention = answers[name]
        gold = attention["gold"]
        assert gold["reference"] == reference and gold["split"] == "test"
        assert gold["matches_translation"] == (gold["reference_tokens"] == attention["tgt_out_tokens"])
        assert (len(gold["aer_by_head"]), len(gold["aer_by_head"][0])) == shape
        assert len(gold["aer_by_layer"]) == shape[0]

        # each head's AER, recomputed here from the reference's teacher-forced cross-attention
        translator = served[name].translator
        src_ids = translator.encode([source])[0]
        tgt_ids = translator.tokenizer.encode_tgt([reference])[0]
        cross = translator.attention_maps(src_ids, tgt_ids)["cross"]  # per layer (H, T+1, S)
        src_words = piece_words(translator.tokenizer.src_pieces(src_ids[:-1]))
        tgt_words = piece_words(translator.tokenizer.tgt_pieces(tgt_ids))
        for layer, maps in enumerate(cross):
            for head in range(maps.shape[0]):
                best = word_alignments(maps[head, : len(tgt_ids), : len(src_ids) - 1], src_words, tgt_words)
                want = aer(as_links(best.tolist()), gold_links)
                assert gold["aer_by_head"][layer][head] == pytest.approx(want)
                assert ("alignment" in attention["roles"]["cross"][layer][head]) == (want <= 0.3)
                assert 0.0 <= want <= 1.0

        # the cells, read back as word links, are the gold links: sure ones marked sure
        links = {(src_words[column], tgt_words[row]): sure for row, column, sure in gold["cells"]}
        assert set(links) == set(gold_links.possible)
        assert {link for link, sure in links.items() if sure} == set(gold_links.sure)
        assert all(row < len(tgt_ids) and column < len(src_ids) - 1 for row, column, _ in gold["cells"])


def test_no_gold_for_a_sentence_not_in_the_corpus_another_corpus_or_no_attention(served):
    assert translate([served["generated"]], SRC[0])["generated"]["gold"] is None  # not a test sentence
    source = gold_split(DATA, "test")[1][0]
    answers = translate([served["generated"], served["multi30k"], served["rnn"]], source)
    assert answers["generated"]["gold"] is not None
    assert answers["multi30k"]["gold"] is None  # trained on another corpus: no gold
    assert answers["rnn"]["maps"] == {} and answers["rnn"]["gold"] is None  # one context vector: nothing
