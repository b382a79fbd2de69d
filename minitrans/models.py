"""Build any of the project's models from its typed config."""

from __future__ import annotations

from minitrans.config import RNNConfig, TransformerConfig
from minitrans.interface import Seq2SeqModel
from minitrans.tokenizer import Tokenizer


def build_model(cfg: TransformerConfig | RNNConfig, tokenizer: Tokenizer) -> Seq2SeqModel:
    if isinstance(cfg, TransformerConfig):
        from minitrans.transformer import Transformer

        return Transformer(
            src_vocab_size=tokenizer.src_vocab_size,
            tgt_vocab_size=tokenizer.tgt_vocab_size,
            pad_id=tokenizer.pad_id,
            d_model=cfg.d_model,
            num_heads=cfg.num_heads,
            d_k=cfg.d_k,
            d_v=cfg.d_v,
            d_ff=cfg.d_ff,
            num_encoder_layers=cfg.num_encoder_layers,
            num_decoder_layers=cfg.num_decoder_layers,
            dropout=cfg.dropout,
            norm_first=cfg.norm_first,
            max_len=cfg.max_len,
            share_embeddings=cfg.share_embeddings and tokenizer.is_joint,
            tie_output=cfg.tie_output,
        )
    from minitrans.rnn import AttentionRNN, FixedContextRNN

    if not tokenizer.is_joint:
        raise ValueError("the RNN models use one joint vocabulary: set data.joint_vocab=true")
    model_class = AttentionRNN if cfg.kind == "rnn_attention" else FixedContextRNN
    extra = {"d_attention": cfg.d_attention} if cfg.kind == "rnn_attention" else {}
    return model_class(
        vocab_size=tokenizer.src_vocab_size,
        pad_id=tokenizer.pad_id,
        d_embed=cfg.d_embed,
        d_hidden=cfg.d_hidden,
        num_layers=cfg.num_layers,
        bidirectional=cfg.bidirectional,
        dropout=cfg.dropout,
        tie_embeddings=cfg.tie_embeddings,
        **extra,
    )


def max_positions(cfg: TransformerConfig | RNNConfig) -> int:
    return cfg.max_len
