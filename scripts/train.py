"""Train a model: ``python scripts/train.py [key=value ...]``; ``-m`` sweeps (Hydra multirun).

Thin by design: it turns the Hydra config into typed dataclasses and calls the library.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import datasets
import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from minitrans.config import ConfigError, check_command_line, register_configs, to_dataclass
from minitrans.trainer import summary_line, train

CONFIG_DIR = str(Path(__file__).resolve().parents[1] / "conf")
log = logging.getLogger("minitrans")
register_configs()
datasets.disable_progress_bars()  # tqdm shows training progress; corpus preparation stays quiet


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="train")
def main(cfg: DictConfig) -> float | None:
    hydra_cfg = HydraConfig.get()
    is_sweep = hydra_cfg.mode == RunMode.MULTIRUN
    try:
        train_cfg = to_dataclass(cfg)
    except ConfigError as error:
        if is_sweep:  # refuse this combination, keep the rest of the sweep going
            log.error("skipping job %s: %s", hydra_cfg.job.override_dirname, error)
            return None
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    out_dir = hydra_cfg.runtime.output_dir
    summary = train(train_cfg, out_dir)
    print(summary_line(summary, out_dir))
    return summary["valid"]["bleu"]


if __name__ == "__main__":
    problem = check_command_line(sys.argv[1:], CONFIG_DIR)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        raise SystemExit(2)
    main()
