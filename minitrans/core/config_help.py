"""``train.py --help``: the configuration groups and every key, one line each, taken from the
schemas themselves.

Each key's line is the comment written beside its field in :mod:`minitrans.core.config` (``d_ff:
int = 1024  # width of the feed-forward layer``), read from the source with ``tokenize``: the
description is written once, next to the field it describes, and a field added to a schema
appears in ``--help`` without touching this file. The text becomes Hydra's own help template
(group ``hydra/help``, option ``minitrans``), so ``--help`` and ``--hydra-help`` work as in
any Hydra application.
"""

from __future__ import annotations

import dataclasses
import inspect
import io
import textwrap
import tokenize

HIDDEN_PREFIX = "testing aid"  # fields whose comment starts so are left out of --help


def field_comments(schema: type) -> dict[str, str]:
    """``{field: its comment}`` for a dataclass schema: the comment beside the field, else a
    comment line right above it, else ``""``."""
    source = textwrap.dedent(inspect.getsource(schema))
    names = {f.name for f in dataclasses.fields(schema)}
    comments: dict[str, str] = dict.fromkeys(sorted(names), "")
    line_field: dict[int, str] = {}
    above: dict[int, str] = {}  # a comment line -> its text, for a field with none of its own
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    for index, token in enumerate(tokens):
        # a field: NAME at the class body's indentation, followed by ':'
        if (
            token.type == tokenize.NAME
            and token.string in names
            and token.start[1] == 4
            and index + 1 < len(tokens)
            and tokens[index + 1].string == ":"
        ):
            line_field[token.start[0]] = token.string
            comments[token.string] = above.get(token.start[0] - 1, "")
        elif token.type == tokenize.COMMENT:
            text = token.string.lstrip("#").strip()
            if token.start[0] in line_field:  # beside the field: its own comment
                comments[line_field[token.start[0]]] = text
            else:
                above[token.start[0]] = text
    return comments


def key_lines(prefix: str, schema: type, only: set[str] | None = None, width: int = 30) -> list[str]:
    """One line per key of ``schema``: ``prefix.name   comment``."""
    comments = field_comments(schema)
    lines = []
    for field in dataclasses.fields(schema):
        comment = comments[field.name]
        if comment.startswith(HIDDEN_PREFIX) or (only is not None and field.name not in only):
            continue
        key = f"{prefix}{field.name}"
        lines.append(f"  {key:<{width}} {comment}".rstrip())
    return lines


def help_text() -> str:
    """Every key of the configuration, grouped by schema, one line each."""
    from minitrans.core.config import CleanConfig, DataConfig, RNNConfig, TrainConfig, TrainerConfig, TransformerConfig

    sections = [
        ("model=transformer (the default)", key_lines("model.", TransformerConfig)),
        ("model=rnn | model=rnn_attention", key_lines("model.", RNNConfig)),
        ("data", key_lines("data.", DataConfig)),
        ("data.clean (training pairs only)", key_lines("data.clean.", CleanConfig)),
        ("trainer", key_lines("trainer.", TrainerConfig)),
        ("run", key_lines("", TrainConfig, {"seed", "name"})),
    ]
    out = []
    for title, lines in sections:
        out += [f"{title}:", *lines, ""]
    return "\n".join(out)


def help_config() -> dict:
    """Hydra's help config (``hydra/help``): header, the groups, every key, footer."""
    header = (
        "Train a sequence-to-sequence model: python scripts/train.py [group=option ...] [key=value ...]\n"
        "A sweep: -m key=a,b,c. A bad key or value ends with one 'error:' line and exit status 2.\n"
    )
    keys = help_text().replace("$", "$$")  # the template is a string.Template
    template = (
        "${hydra.help.header}\n"
        "== Configuration groups == (group=option)\n\n"
        "$APP_CONFIG_GROUPS\n\n"
        "== Keys == (key=value; defaults come from the chosen group files: add --cfg job to see the values)\n\n"
        f"{keys}\n"
        "${hydra.help.footer}"
    )
    footer = "Hydra's own flags (-m, --cfg, --multirun, hydra.run.dir=...): --hydra-help\n"
    return {"app_name": "train.py", "header": header, "footer": footer, "template": template}


__all__ = ["field_comments", "help_config", "help_text", "key_lines"]
