"""SentencePiece tokenizer: special ids, round trips, byte fallback, caching, checkpoint state."""

import pytest

from minitrans.data.tokenizer import BOS_ID, EOS_ID, PAD_ID, UNK_ID, Tokenizer

EN = ["the big dog sees the man .", "a small cat sleeps .", "the woman reads a book ."] * 20
DE = ["der große Hund sieht den Mann .", "eine kleine Katze schläft .", "die Frau liest ein Buch ."] * 20


def test_special_ids_and_round_trip():
    tok = Tokenizer.train(EN, DE, vocab_size=300)
    assert (tok.pad_id, tok.unk_id, tok.bos_id, tok.eos_id) == (PAD_ID, UNK_ID, BOS_ID, EOS_ID) == (0, 1, 2, 3)
    src = tok.encode_src(["the big dog"])[0]
    assert src[-1] == EOS_ID and EOS_ID not in src[:-1]
    tgt = tok.encode_tgt(["die große Katze schläft ."])[0]
    assert BOS_ID not in tgt and EOS_ID not in tgt
    assert tok.decode_tgt([BOS_ID, *tgt, EOS_ID, 17, 18]) == "die große Katze schläft ."


def test_a_lone_word_start_piece_gives_no_double_or_trailing_space():
    tok = Tokenizer.train(EN, DE, vocab_size=300)
    space = tok.tgt.piece_to_id("▁")
    assert tok.tgt.id_to_piece(space) == "▁"
    die, katze = tok.encode_tgt(["die"])[0], tok.encode_tgt(["Katze"])[0]
    assert tok.tgt.decode([*die, space, *katze]) == "die  Katze"  # what SentencePiece alone gives
    assert tok.decode_tgt([*die, space, *katze, EOS_ID]) == "die Katze"
    assert tok.decode_tgt([*die, space, space, *katze, space]) == "die Katze"


def test_unseen_characters_fall_back_to_bytes():
    tok = Tokenizer.train(EN, DE, vocab_size=300)
    text = "der Hund ☃ 漢字"
    ids = tok.encode_tgt([text])[0]
    assert UNK_ID not in ids
    assert tok.decode_tgt(ids) == text
    assert any(piece.startswith("<0x") for piece in tok.tgt_pieces(ids))


def test_empty_sentence_is_just_eos():
    tok = Tokenizer.train(EN, DE, vocab_size=300)
    assert tok.encode_src([""]) == [[EOS_ID]]


def test_cache_is_keyed_by_corpus_and_settings(tmp_path):
    first = Tokenizer.train(EN, DE, vocab_size=300, cache_dir=tmp_path)
    cached = list((tmp_path / "spm").iterdir())
    assert len(cached) == 1
    again = Tokenizer.train(EN, DE, vocab_size=300, cache_dir=tmp_path)
    assert again.src_proto == first.src_proto
    Tokenizer.train(EN, DE, vocab_size=250, cache_dir=tmp_path)
    Tokenizer.train(EN[:30], DE, vocab_size=300, cache_dir=tmp_path)
    assert len(list((tmp_path / "spm").iterdir())) == 3


def test_cache_key_tells_a_row_with_a_newline_from_two_rows(tmp_path):
    """Texts joined by newlines made ["a b\\nc d"] and ["a b", "c d"] one key, and a source text
    moved to the target side (across the joining NUL) another collision."""
    Tokenizer.train([*EN, "the dog\nthe cat"], DE, vocab_size=300, cache_dir=tmp_path)
    Tokenizer.train([*EN, "the dog", "the cat"], DE, vocab_size=300, cache_dir=tmp_path)
    Tokenizer.train(EN, ["\x00".join(["", *DE[:1]]), *DE[1:]], vocab_size=300, cache_dir=tmp_path)
    Tokenizer.train([*EN, ""], DE[1:], vocab_size=300, cache_dir=tmp_path)
    assert len(list((tmp_path / "spm").iterdir())) == 4


def test_separate_vocabularies_and_state_round_trip(tmp_path):
    tok = Tokenizer.train(EN, DE, vocab_size=300, joint=False)
    assert not tok.is_joint and tok.src_proto != tok.tgt_proto
    restored = Tokenizer.from_state(tok.to_state())
    assert restored.encode_tgt(DE[:3]) == tok.encode_tgt(DE[:3])
    tok.save(tmp_path / "tok")
    loaded = Tokenizer.load(tmp_path / "tok")
    assert loaded.encode_src(EN[:3]) == tok.encode_src(EN[:3]) and not loaded.is_joint
    joint = Tokenizer.from_state(Tokenizer.train(EN, DE, vocab_size=300).to_state())
    assert joint.is_joint


def test_a_damaged_tokenizer_or_tokenised_corpus_cache_is_rebuilt(tmp_path, tiny_config):
    from minitrans.training.run_data import prepare_training_data

    cfg = tiny_config(f"data.cache_dir={tmp_path}")
    first = prepare_training_data(cfg)
    damaged = [*tmp_path.glob("spm/*/src.model"), *tmp_path.glob("tokenized/*.arrow")]
    assert {p.parent.parent.name if p.suffix == ".model" else p.parent.name for p in damaged} == {"spm", "tokenized"}
    for path in damaged:
        path.write_bytes(b"\x00garbage" * 10)
    with pytest.warns(UserWarning, match="rebuilding the damaged"):
        again = prepare_training_data(cfg)
    assert [row.tolist() for row in again.src_ids] == [row.tolist() for row in first.src_ids]
    assert again.tokenizer.src_proto == first.tokenizer.src_proto


def test_the_targets_own_characters_survive_a_round_trip():
    """Full-width forms (Japanese, Chinese) and U+200C (Persian) are text, not noise to
    normalise away: NFKC would write ？ as ? and １０ as 10, and turn ZWNJ into a space."""
    ja = ["１０時に会いましょう？", "本当ですか！", "はい、１０個です。"] * 20
    fa = ["می\u200cخواهم بروم", "کتاب\u200cها را دیدم"] * 20
    tok = Tokenizer.train(EN, ja + fa, vocab_size=300)
    for text in ("１０時ですか？", "می\u200cخواهم"):
        assert tok.decode_tgt(tok.encode_tgt([text])[0]) == text
    # whitespace still becomes one space, as cleaning makes it, and text is composed (NFC)
    assert tok.decode_tgt(tok.encode_tgt(["der\tHund\u3000schläft"])[0]) == "der Hund schläft"
    assert tok.encode_tgt(["scha\u0308dlich"]) == tok.encode_tgt(["schädlich"])


# one form of each: composed and decomposed letters, every kind of space, full-width forms, ZWNJ
FORMS = ["ä", "a\u0308", "ö", "o\u0308", " ", "  ", "\u00a0", "\t", "\u3000", "\u2000", "Ａ", "A", "\u200c", "x"]
FORMS += ["Å", "\u212b"]  # the letter and the Ångström sign, which NFC makes the letter


def test_two_texts_with_the_same_ids_have_the_same_model_text():
    """The key by which held-out sources leave training is the text as the model sees it:
    whatever gives the same token ids gives the same key, and only that."""
    import itertools

    import pyarrow as pa

    from minitrans.data.tokenizer import model_text, model_texts

    tok = Tokenizer.train([*EN, "Mädchen Öl Ångström"], DE, vocab_size=300)
    texts = ["".join(chars) for chars in itertools.product(FORMS, repeat=2)] + [
        f"{a}das Ma\u0308dchen{b}" for a, b in itertools.product(FORMS, repeat=2)
    ]
    ids = [tuple(row) for row in tok.encode_src(texts)]
    keys = [model_text(text) for text in texts]
    assert model_texts(pa.array(texts)).to_pylist() == keys
    for (ids_a, key_a), (ids_b, key_b) in itertools.combinations(zip(ids, keys), 2):
        assert (ids_a == ids_b) == (key_a == key_b)
    assert model_text(" scha\u0308dlich\u00a0 Hund ") == "schädlich Hund"
    assert model_text("Ａ") != model_text("A")  # full-width forms are other token ids: another text
