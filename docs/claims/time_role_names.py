"""Time the role naming of TensorBoard's attention cards (docs/claims.md, claim 4): one
validation's sample cards drawn with and without map_roles, and map_roles alone, on a run's
checkpoint, median of 7: ``python docs/claims/time_role_names.py RUN [SAMPLES]`` (default 3,
the default run's trainer.sample_sentences)."""

import statistics
import sys
import time

import torch

from minitrans.analysis.attention_stats import attention_entropy
from minitrans.analysis.head_roles import map_roles
from minitrans.analysis.viz import attention_card_images
from minitrans.data.corpus import load_run_split
from minitrans.export.loading import load_torch_translator
from minitrans.runs import tblog

torch.set_num_threads(1)
translator = load_torch_translator(sys.argv[1], "cpu")
sources, references, _ = load_run_split(translator.config, "valid")
samples = int(sys.argv[2]) if len(sys.argv) > 2 else 3
src_ids = translator.encode(sources[:samples])
found = [tblog._sample_maps(translator, ids, ref) for ids, ref in zip(src_ids, references[:samples])]


def without_roles():
    for maps in found:
        attention_card_images(*maps, "sample · "), attention_entropy(maps[0])


def with_roles():
    for maps in found:
        attention_card_images(*maps, "sample · ", roles=map_roles(maps[0])), attention_entropy(maps[0])


def roles_alone():
    for maps in found:
        map_roles(maps[0])


for name, measure in (
    ("cards without roles", without_roles),
    ("cards with roles", with_roles),
    ("map_roles alone", roles_alone),
):
    times = []
    for _ in range(7):
        start = time.perf_counter()
        measure()
        times.append(time.perf_counter() - start)
    print(f"{name}: median {statistics.median(times) * 1000:.1f} ms over 7 ({samples} sample sentences)")
