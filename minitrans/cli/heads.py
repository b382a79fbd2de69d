"""What ``scripts/heads.py`` does once its options are parsed: load a Transformer (a run folder,
``.pt`` file or shareable folder), measure its heads on a split, print the tables and write the
results (see the script's docstring for what each measure is).

Alignment: the AER of every cross-attention head against the gold alignments, which only the
embedded corpus has. Importance: each head masked alone, then cumulatively, with the change in
validation loss and greedy BLEU. Roles: each head's role scores beside its ablation cost.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import datasets

from minitrans.analysis.alignment import gold_for_pairs, measure_alignment
from minitrans.analysis.head_roles import ROLE_THRESHOLDS, measure_self_attention_roles, name_roles, subject_probe
from minitrans.analysis.heads import ablate_heads, all_heads, head_label, heads_heatmap
from minitrans.core.checkpoint import CheckpointError, CheckpointFolder
from minitrans.core.decoding_options import DecodingOptions, run_settings
from minitrans.core.utils import pick_device, write_atomic
from minitrans.data.corpus import load_run_split
from minitrans.export.loading import load_torch_translator
from minitrans.inference.hf_folder import is_hf_export
from minitrans.runs.evaluation import evaluate_split, validation_loss


def grid_text(grid: list[list[float]]) -> str:
    """A layer x head grid as text, layers and heads counted from 1 (as the pictures count them)."""
    lines = ["layer " + "".join(f"{'H' + str(h):>7}" for h in range(1, len(grid[0]) + 1))]
    lines += [f"L{layer:<5}" + "".join(f"{value:>7.3f}" for value in row) for layer, row in enumerate(grid, 1)]
    return "\n".join(lines)


def alignment_report(translator, data, split: str, sources, references, src_ids, tgt_ids, out: Path) -> None:
    gold = gold_for_pairs(data, sources, references)
    if gold is None:
        print(f"alignment: no gold alignments for corpus {data.name!r} (only the embedded corpus has them)")
        return None
    report = measure_alignment(translator.model, translator.tokenizer, src_ids, tgt_ids, gold, translator.device)
    if report is None:
        print("alignment: this model has no cross-attention (the fixed-context RNN)")
        return None
    if report.sentences == 0:  # the AER of no pair is undefined, not 0: aer.json keeps what it holds
        print(
            f"alignment: no pair of split {split!r} has a gold alignment (the embedded corpus has them for valid and test)"
        )
        return None
    summary = report.summary()
    layer, head = summary["aer_best_layer"], summary["aer_best_head"]
    print(f"AER of each cross-attention head ({report.sentences} pairs, teacher-forced references):")
    print(grid_text(report.aer_grid()))
    print("heads averaged per layer: " + "  ".join(f"L{i} {v:.3f}" for i, v in enumerate(summary["aer_by_layer"], 1)))
    print(
        f"best head: layer {layer + 1} head {head + 1}: AER {summary['aer_best']:.3f} "
        f"(precision {summary['aer_best_precision']:.3f}, recall {summary['aer_best_recall']:.3f})"
    )
    write_atomic(out / "aer.json", json.dumps(summary, indent=2) + "\n")
    heads_heatmap({"cross-attention AER": report.aer_grid()}, "AER (lower aligns better)", cmap="viridis_r").savefig(
        out / "aer.png"
    )
    return report.aer_grid()


def ablation_report(translator, sources, references, src_ids, tgt_ids, args, out: Path) -> None:
    if not all_heads(translator.model):
        print("ablation: this model has no attention heads to mask")
        return None
    split = datasets.Dataset.from_dict({"src": sources, "tgt": references, "src_ids": src_ids, "tgt_ids": tgt_ids})

    def measure() -> dict[str, float]:
        scores = {"loss": validation_loss(translator.model, split, args.batch_tokens, translator.device)}
        if args.bleu_limit:
            options = DecodingOptions(**run_settings(translator.run_config))  # greedy, as the run decodes
            scores["bleu"] = evaluate_split(translator, split, options, limit=args.bleu_limit)[0]["bleu"]
        return scores

    ablation = ablate_heads(translator.model, measure)
    metrics = ["loss", "bleu"] if args.bleu_limit else ["loss"]
    table = ablation.table(metrics)
    print(f"head importance on {len(sources)} pairs (BLEU on the first {args.bleu_limit}), most important first:")
    print(table)
    write_atomic(out / "ablation.txt", table + "\n")
    summary = ablation.summary()
    write_atomic(out / "ablation.json", json.dumps(summary, indent=2) + "\n")
    kinds = list(dict.fromkeys(kind for kind, _, _ in ablation.single))  # encoder, decoder, cross
    for metric in metrics:
        grids = {f"{kind}: Δ {metric}": ablation.grid(kind, metric) for kind in kinds}
        cmap = "Reds" if metric == "loss" else "Blues_r"
        heads_heatmap(grids, f"Δ {metric}, head masked", cmap=cmap).savefig(out / f"ablation_{metric}.png")
    return ablation


def subject_scores(translator, count: int) -> dict[str, list[list[float]]]:
    """{kind: [layer][head] subject share} on ``count`` generated pairs with gold links ({} for
    another corpus or count 0)."""
    probe = (
        subject_probe(translator.tokenizer, translator.run_config.data, count, translator.max_len) if count else None
    )
    if not probe or not probe[0]:
        return {}
    roles = measure_self_attention_roles(translator.model, *probe[:2], translator.device, links=probe[2])
    print(f"subject role: {len(probe[0])} generated pairs, each verb's weight on its subject across a relative clause")
    return {kind: [[head["subject"] for head in layer] for layer in layers] for kind, layers in roles.items()}


def roles_report(translator, src_ids, tgt_ids, aer_grid, ablation, out: Path, subject_pairs: int = 0) -> None:
    """Each head's role scores beside its ablation cost, the role named where a score passes
    its threshold (minitrans/analysis/head_roles.py); written to roles.json and roles.txt."""
    if not all_heads(translator.model):
        return
    roles = measure_self_attention_roles(translator.model, src_ids, tgt_ids, translator.device)
    subjects = subject_scores(translator, subject_pairs)
    deltas = ablation.deltas("loss") if ablation is not None else {}
    rows = []
    for kind, layer, head in all_heads(translator.model):
        scores = dict(roles[kind][layer][head]) if kind in roles else {}
        if kind in subjects:
            scores["subject"] = subjects[kind][layer][head]
        aer = aer_grid[layer][head] if kind == "cross" and aer_grid is not None else None
        if aer is not None:
            scores["aer"] = aer
        delta = deltas.get((kind, layer, head))
        rows.append(
            {"head": head_label(kind, layer, head), **scores, "delta_loss": delta, "roles": name_roles(scores, aer)}
        )

    def cell(value):
        return f"{value:>9.3f}" if value is not None else f"{'-':>9}"

    thresholds = ", ".join(f"{role} {value}" for role, value in ROLE_THRESHOLDS.items())
    lines = [f"head roles (named at: share >= threshold, AER <= {ROLE_THRESHOLDS['alignment_aer']}; {thresholds}):"]
    lines.append(f"{'head':<16}{'previous':>9}{'next':>9}{'subject':>9}{'AER':>9}{'Δ loss':>9}  role")
    for row in rows:
        values = "".join(cell(row.get(key)) for key in ("previous", "next", "subject", "aer", "delta_loss"))
        lines.append(f"{row['head']:<16}{values}  {', '.join(row['roles']) or '-'}")
    text = "\n".join(lines)
    print(text)
    write_atomic(out / "roles.txt", text + "\n")
    write_atomic(out / "roles.json", json.dumps({"thresholds": ROLE_THRESHOLDS, "heads": rows}, indent=2) + "\n")


def run(args: argparse.Namespace) -> int:
    try:
        translator = load_torch_translator(args.run, pick_device(args.device))  # refuses a CTranslate2 export
        shared = is_hf_export(args.run)  # export.py --to hf: its results go into the folder, as evaluate.py's
        checkpoint = translator.path
        data = translator.run_config.data
        sources, references, _ = load_run_split(translator.config, args.split)
    except (CheckpointError, FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if translator.run_config.model.kind == "rnn":  # neither heads to mask nor attention to align
        print(
            f"error: {args.run} holds the fixed-context RNN (model=rnn), which has no attention: "
            "there is nothing for heads.py to measure",
            file=sys.stderr,
        )
        return 1
    sources, references = sources[: args.limit], references[: args.limit]
    src_ids = translator.encode(sources)
    tgt_ids = [ids[: translator.max_len - 1] for ids in translator.tokenizer.encode_tgt(references)]
    folder = (
        (checkpoint if checkpoint.is_dir() else checkpoint.parent)
        if shared
        else CheckpointFolder.run_folder_of(checkpoint)
    )
    out = args.out if args.out is not None else folder / "heads"
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:  # a file of that name, a folder that is not writable
        where = "a file of that name exists" if out.exists() and not out.is_dir() else error.strerror or error
        print(f"error: --out {out}: {where}; name a folder for the results", file=sys.stderr)
        return 1
    aer_grid = alignment_report(translator, data, args.split, sources, references, src_ids, tgt_ids, out)
    ablation = None
    if not args.no_ablation:
        ablation = ablation_report(translator, sources, references, src_ids, tgt_ids, args, out)
    roles_report(translator, src_ids, tgt_ids, aer_grid, ablation, out, args.subject_pairs)
    if aer_grid is None and ablation is None and not all_heads(translator.model):
        print(f"nothing was measured (see above); nothing was written into {out}")
        return 1
    print(f"wrote the results into {out}")
    return 0
