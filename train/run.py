"""Build the task a TrainConfig asks for and run the one training loop on it."""

from __future__ import annotations

from dataclasses import fields

from comco.errors import UserError
from comco.train.config import TrainConfig

KINDS = ("scratch", "longclip", "debias", "labclip")
LONG_TEMPLATE = "long"


def kind_defaults(kind: str) -> dict:
    """Settings where a kind departs from the paper's fine-tuning defaults."""
    if kind == "scratch":
        from comco.train.scratch import DEFAULTS
        return dict(DEFAULTS)
    if kind == "labclip":
        from comco.train.labclip import DEFAULTS
        return dict(DEFAULTS)
    return {}


def make_config(kind: str, **given) -> TrainConfig:
    """A TrainConfig from the options a user gave (None = not given): given > kind > paper."""
    if kind not in KINDS:
        raise UserError(f"unknown training kind '{kind}'; one of {', '.join(KINDS)}")
    names = {f.name for f in fields(TrainConfig)}
    unknown = set(given) - names
    if unknown:
        raise TypeError(f"unknown TrainConfig fields {sorted(unknown)}")
    values = {**kind_defaults(kind), **{k: v for k, v in given.items() if v is not None}}
    if kind in ("longclip", "debias"):
        from comco.train.longclip import resolve_weights

        # stored resolved, so a resumed run checks the weights it trains with
        values["options"] = resolve_weights(kind, values.get("options") or {})
    cfg = TrainConfig(kind=kind, **values)
    cfg.check()
    return cfg


def short_templates(path) -> list[str]:
    """Every caption template of a comco dataset except long and swapped ones."""
    from comco.data.folder import Dataset

    first = next(iter(Dataset(path).records()), None)
    names = sorted((first or {}).get("captions", {}))
    return [n for n in names if n != LONG_TEMPLATE and not n.endswith("_swapped")]


def build_task(cfg: TrainConfig):
    from pathlib import Path

    from comco.train.data import is_comco_dataset, load_training_data

    if cfg.kind == "scratch":
        from comco.train.scratch import ScratchTask

        templates = cfg.options.get("captions") or (
            short_templates(cfg.data) if is_comco_dataset(Path(cfg.data)) else []
        )
        data = load_training_data(cfg.data, templates=templates, image_root=cfg.image_root)
        return ScratchTask(data, cfg)

    from comco.train.init_model import load_init

    if cfg.kind in ("longclip", "debias"):
        from comco.train.longclip import LongClipTask, check_long_captions

        template = cfg.options.get("template", LONG_TEMPLATE)
        data = load_training_data(cfg.data, templates=[template], image_root=cfg.image_root)
        if cfg.kind == "debias":
            check_long_captions(data, template)
        loaded = load_init(cfg.init, cfg.pretrained, cfg.kind)
        return LongClipTask(cfg.kind, data, cfg, loaded, cfg.init)

    from comco.train.labclip import LabclipTask

    data = load_training_data(
        cfg.data, templates=["attributes"], image_root=cfg.image_root, negatives="attributes_swapped"
    )
    from comco.train.loop import resolve_device

    # the frozen model only embeds the data once: do that on the training device
    loaded = load_init(cfg.init, cfg.pretrained, cfg.kind, device=resolve_device(cfg.device))
    return LabclipTask.from_model(loaded, cfg.init, data, cfg)


def run_training(cfg: TrainConfig) -> dict:
    """Train what `cfg` describes (scratch, longclip, debias, labclip) and write its checkpoints.

    Args:
        cfg: from make_config.
    Returns the run's summary (steps, seconds, final loss, the checkpoint's path)."""
    from comco.train.loop import train

    return train(build_task(cfg), cfg)
