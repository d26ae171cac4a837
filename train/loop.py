"""The one training loop: deterministic order, accumulation, AMP, DDP, checkpoints,
resumption, metrics.jsonl and a progress bar. What is trained comes from a Task."""

from __future__ import annotations

import contextlib
import json
import math
import sys
import time
from pathlib import Path

import torch
from torch import nn

from comco.errors import UserError
from comco.io import write_json, write_text
from comco.progress import progress
from comco.train import distributed
from comco.train.config import TrainConfig, differing_fields
from comco.train.schedule import short_warmup, step_indices, warmup_cosine
from comco.train.task import Task

CHECKPOINT_NAME = "checkpoint.pt"
FINAL_NAME = "model.pt"
METRICS_NAME = "metrics.jsonl"


def resolve_device(name: str) -> str:
    from comco.models import check_device

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return check_device(name)


def autocast_dtype(precision: str, device: torch.device, kind: str = "scratch") -> torch.dtype | None:
    """None means full fp32. On a GPU `auto` is bf16 where it has it, fp16 elsewhere; on a CPU
    bf16 for a scratch training where the CPU multiplies it natively, fp32 otherwise
    (comco.train.precision)."""
    if precision == "fp32":
        return None
    if device.type != "cuda":
        from comco.train.precision import cpu_precision

        return torch.bfloat16 if cpu_precision(precision, kind=kind) == "bf16" else None
    if precision == "fp16":
        return torch.float16
    if precision == "bf16" or torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float16


def precision_name(dtype: torch.dtype | None) -> str:
    """What a run records as its precision: fp32, or the autocast dtype's short name."""
    return {None: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}[dtype]


def make_optimizer(groups: list[dict], cfg: TrainConfig, rowwise: bool = False) -> torch.optim.Optimizer:
    """Adam or AdamW as the config asks; `rowwise`: AdamW that also takes the sparse gradient of
    a token table (comco.train.sparse_table: the same update, without the unused rows)."""
    kw = {"lr": cfg.lr, "betas": tuple(cfg.adam_betas), "eps": cfg.adam_eps, "fused": _can_fuse(groups)}
    if cfg.optimizer == "adam":
        # plain Adam: weight decay (if any) as L2 in the gradient, as LABCLIP trains
        return torch.optim.Adam(groups, **kw)
    if rowwise:
        from comco.train.sparse_table import RowwiseAdamW

        return RowwiseAdamW(groups, **kw)
    return torch.optim.AdamW(groups, **kw)


def _can_fuse(groups: list[dict]) -> bool:
    """torch's fused Adam(W): the same update in one kernel per step. On CPUs the per-tensor
    loop spends a fifth of a scratch step on the 49408-row token table (benchmarks/train.py
    prints both); fused needs floating parameters on one CPU or CUDA device."""
    params = [p for g in groups for p in g["params"]]
    devices = {p.device.type for p in params}
    return (bool(params) and len(devices) == 1 and devices <= {"cpu", "cuda"}
            and all(p.is_floating_point() for p in params))


def plan_micro_batches(cfg: TrainConfig, step: int, n: int) -> list[tuple[int, list[int]]]:
    """This process's micro-batches for one optimiser step, as (epoch, indices)."""
    epoch, indices = step_indices(cfg.seed, step, n, cfg.batch_size)
    world, rank = distributed.world_size(), distributed.rank()
    share = len(indices) // world
    mine = indices[rank * share:(rank + 1) * share].tolist()
    micro = len(mine) // cfg.accum
    return [(epoch, mine[i * micro:(i + 1) * micro]) for i in range(cfg.accum)]


def channels_last_convs(module: nn.Module) -> bool:
    """Store a convolutional image tower (open_clip's ModifiedResNet) channels-last, so that
    oneDNN's and cuDNN's convolutions, batch norms and pools take their channels-last kernels
    whatever the layout of the batch: fine-tunes read files through the model's preprocess
    (NCHW batches), where a step of the lab's conv model is about 1.3x faster this way
    (benchmarks/train.py); scratch training's cached batches are channels-last views already.
    The tower's outputs agree with the default layout to float rounding. A ViT keeps its layout."""
    visual = getattr(module, "visual", None)
    if visual is None or sum(isinstance(m, nn.Conv2d) for m in visual.modules()) < 2:
        return False
    visual.to(memory_format=torch.channels_last)
    return True


class Trainer:
    def __init__(self, task: Task, cfg: TrainConfig):
        cfg.check()
        self.task, self.cfg = task, cfg
        self.out = Path(cfg.out)
        self.device = distributed.setup(resolve_device(cfg.device))
        world = distributed.world_size()
        n = task.num_samples()
        if cfg.batch_size % (cfg.accum * world):
            raise UserError(f"--batch-size {cfg.batch_size} does not split into --accum {cfg.accum} "
                            f"x {world} processes; pick a multiple of {cfg.accum * world}")
        self.steps_per_epoch = n // cfg.batch_size
        if self.steps_per_epoch == 0:
            raise UserError(f"the data has {n} samples, fewer than one batch of --batch-size {cfg.batch_size}; "
                            "lower --batch-size")
        self.total_steps = cfg.steps or max(1, math.ceil(cfg.epochs * self.steps_per_epoch))
        self.micro_batch = cfg.batch_size // (cfg.accum * world)
        torch.manual_seed(cfg.seed)
        self.module = task.module.to(self.device)
        channels_last_convs(self.module)
        self.trained = self.module
        if distributed.is_distributed():
            ids = [self.device.index] if self.device.type == "cuda" else None
            self.trained = nn.parallel.DistributedDataParallel(self.module, device_ids=ids)
        groups = task.param_groups(cfg.weight_decay)
        self.table = None
        if (self.device.type == "cpu" and self.trained is self.module and cfg.optimizer == "adamw"
                and _can_fuse(groups)):
            # on one CPU the token table trains row by row: the same weights, a step 1.08x faster alone
            # and 1.22-1.38x with two trainings side by side (docs/reference/speed.md)
            from comco.train.sparse_table import sparse_token_table

            self.table = sparse_token_table(self.module)
        self.optimizer = make_optimizer(groups, cfg, rowwise=self.table is not None)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, warmup_cosine(cfg.warmup, self.total_steps))
        note = short_warmup(cfg.warmup, self.total_steps, cfg.lr)
        if note and distributed.is_main() and not cfg.quiet:
            print(f"comco: {note}", file=sys.stderr)
        self.amp_dtype = autocast_dtype(cfg.precision, self.device, cfg.kind)
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.amp_dtype == torch.float16)
        self.step = 0
        from comco.train.snapshots import snapshot_steps

        self.snapshot_steps = set(snapshot_steps(self.total_steps, int(cfg.options.get("checkpoints", 0)),
                                                 cfg.options.get("checkpoint_spacing", "even")))

    # ---------------------------------------------------------------- state
    def state(self) -> dict:
        rng = {"torch": torch.get_rng_state()}
        if torch.cuda.is_available():
            rng["cuda"] = torch.cuda.get_rng_state_all()
        return {
            "config": self.cfg.to_dict(), "config_hash": self.cfg.identity_hash(), "step": self.step,
            "precision": precision_name(self.amp_dtype),
            "total_steps": self.total_steps, "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(), "scaler": self.scaler.state_dict(), "rng": rng,
            # captions and pads are drawn from generators derived from (seed, epoch, sample),
            # so the sampler's whole state is the seed and the step reached
            "sampler_rng": {"seed": self.cfg.seed, "step": self.step,
                            "epoch": self.step // self.steps_per_epoch},
        }

    def save(self, name: str) -> Path | None:
        if not distributed.is_main():
            return None
        from comco.models import save_checkpoint

        payload = self.task.checkpoint_payload()
        extra = {**payload.get("extra", {}), **self.state()}
        return save_checkpoint(self.out / name, kind=payload["kind"], model=payload["model"],
                               model_spec=payload["model_spec"], extra=extra)

    def save_snapshot(self) -> None:
        """The weights at this step, when it is one of the run's snapshot steps (comco.train.snapshots)."""
        if self.step not in self.snapshot_steps or not distributed.is_main():
            return
        from comco.models import save_checkpoint
        from comco.train.snapshots import snapshot_path

        payload = self.task.checkpoint_payload()
        extra = {**payload.get("extra", {}), "config": self.cfg.to_dict(), "step": self.step,
                 "total_steps": self.total_steps, "snapshot": True}
        save_checkpoint(snapshot_path(self.out, self.step), kind=payload["kind"], model=payload["model"],
                        model_spec=payload["model_spec"], extra=extra)

    def resume(self, path: str | Path) -> None:
        from comco.models import load_checkpoint

        ckpt = load_checkpoint(path)
        if not isinstance(ckpt.get("config"), dict):
            raise UserError(f"--resume-from {path}: damaged checkpoint (no training configuration); start a new --out")
        if "optimizer" not in ckpt:
            raise UserError(f"--resume-from {path}: holds weights only, no training state; "
                            "start a new run with --init ckpt:PATH instead")
        differ = differing_fields(ckpt.get("config", {}), self.cfg.to_dict())
        if differ or ckpt.get("config_hash") != self.cfg.identity_hash():
            shown = ", ".join(f"--{k.replace('_', '-')}" for k in differ[:4]) or "settings"
            raise UserError(f"--resume-from {path}: that checkpoint was trained with other {shown}; "
                            "resume with the same options or start a new --out")
        try:
            self.task.load_state(ckpt)
            self.optimizer.load_state_dict(ckpt["optimizer"])
            self.scheduler.load_state_dict(ckpt["scheduler"])
            self.scaler.load_state_dict(ckpt["scaler"])
            torch.set_rng_state(ckpt["rng"]["torch"])
            if "cuda" in ckpt["rng"] and torch.cuda.is_available():
                torch.cuda.set_rng_state_all(ckpt["rng"]["cuda"])
            self.step = int(ckpt["step"])
        except (KeyError, TypeError, ValueError, RuntimeError) as exc:
            # the configuration matched but the state does not fit it: an edited or damaged file
            first = (str(exc).strip().splitlines() or [""])[0][:120]
            raise UserError(f"--resume-from {path}: damaged checkpoint ({exc.__class__.__name__}: {first}); "
                            "resume from an earlier copy or start a new --out") from None

    # ---------------------------------------------------------------- one step
    def _autocast(self):
        if self.amp_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.amp_dtype)

    def _micro_step(self, batch, last: bool) -> tuple[float, dict]:
        sync = contextlib.nullcontext() if last or self.trained is self.module else self.trained.no_sync()
        with sync:
            with self._autocast():
                loss, parts = self.task.loss(self.trained, batch.to(self.device))
            self.scaler.scale(loss / self.cfg.accum).backward()
        return loss.item(), parts

    def train_step(self, batches) -> dict:
        started = time.perf_counter()
        data_time, losses, parts_sum, samples = 0.0, [], {}, 0
        self.trained.train()
        for i in range(self.cfg.accum):
            waited = time.perf_counter()
            batch = next(batches)
            data_time += time.perf_counter() - waited
            try:
                loss, parts = self._micro_step(batch, last=i == self.cfg.accum - 1)
            except torch.cuda.OutOfMemoryError:
                raise UserError(f"out of GPU memory with {self.micro_batch} samples per micro-batch; "
                                f"raise --accum (e.g. --accum {self.cfg.accum * 2})") from None
            losses.append(loss)
            samples += batch.size
            for k, v in parts.items():
                parts_sum[k] = parts_sum.get(k, 0.0) + v / self.cfg.accum
        if not all(math.isfinite(v) for v in losses):
            raise RuntimeError(f"loss is not finite at step {self.step}: {losses}")
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad(set_to_none=True)
        after_step = getattr(self.task, "after_step", None)
        if after_step is not None:
            after_step()
        lr = self.scheduler.get_last_lr()[0]
        self.scheduler.step()
        self.step += 1
        elapsed = time.perf_counter() - started
        global_samples = samples * distributed.world_size()
        return {"step": self.step, "epoch": (self.step - 1) // self.steps_per_epoch,
                "loss": sum(losses) / len(losses), **parts_sum, "lr": lr,
                "samples_per_s": global_samples / elapsed, "step_s": elapsed,
                "data_share": data_time / elapsed}

    # ---------------------------------------------------------------- the run
    def run(self) -> dict:
        self.out.mkdir(parents=True, exist_ok=True)
        if self.cfg.resume:
            self.resume(self.cfg.resume)
        metrics_path = self.out / METRICS_NAME
        if distributed.is_main():
            _truncate_metrics(metrics_path, self.step)
            write_json(self.out / "config.json", self.cfg.to_dict(), sort_keys=False, default=str)
        stop = self.total_steps
        if self.cfg.stop_after is not None:
            stop = min(stop, self.step + self.cfg.stop_after)
        n = self.task.num_samples()
        plan = (mb for s in range(self.step, stop) for mb in plan_micro_batches(self.cfg, s, n))
        batches = iter(self.task.batches(plan))
        last: dict = {}
        if self.step == 0:
            self.save_snapshot()  # the untrained point of the development curves
        show = distributed.is_main() and not self.cfg.quiet
        try:
            with (
                progress(self.total_steps, f"train {self.cfg.kind}", "steps", quiet=not show, start=self.step) as bar,
                open(metrics_path, "a") if distributed.is_main() else contextlib.nullcontext() as log,
            ):
                while self.step < stop:
                    last = self.train_step(batches)
                    if log is not None and (self.step % self.cfg.log_every == 0 or self.step == stop):
                        log.write(json.dumps({**last, "time": time.time()}) + "\n")
                        log.flush()
                    bar.set(self.step, f"loss {last['loss']:.4f}  {last['samples_per_s']:.1f} samples/s")
                    self.save_snapshot()
                    if self.step % self.cfg.checkpoint_every == 0 and self.step < self.total_steps:
                        self.save(CHECKPOINT_NAME)
        except KeyboardInterrupt:
            self.save(CHECKPOINT_NAME)
            raise UserError(
                f"interrupted at step {self.step}; continue with --resume-from {self.out / CHECKPOINT_NAME}"
            ) from None
        finally:
            _close(batches)
            from comco.train.sparse_table import dense_again

            dense_again(self.table)  # what runs after training (evaluation, probes) sees a plain table
        summary = {"step": self.step, "total_steps": self.total_steps, "last": last,
                   "precision": precision_name(self.amp_dtype)}
        if self.step >= self.total_steps:
            summary["checkpoint"] = str(self.save(FINAL_NAME))
            summary.update(self.task.finish(self.out) or {})
        else:
            summary["checkpoint"] = str(self.save(CHECKPOINT_NAME))
        distributed.barrier()
        return summary


def _truncate_metrics(path: Path, step: int) -> None:
    """Keep only the lines up to `step`: a resumed run rewrites what came after."""
    if not path.exists():
        return
    kept = [line for line in path.read_text(errors="replace").splitlines() if _logged_step(line) <= step]
    write_text(path, "".join(line + "\n" for line in kept))


def _logged_step(line: str) -> float:
    """The step of one metrics line; a cut or garbled line (a crash mid-write) counts as after any step."""
    try:
        record = json.loads(line)
    except ValueError:
        return math.inf
    step = record.get("step") if isinstance(record, dict) else None
    return step if isinstance(step, int) and not isinstance(step, bool) else math.inf


def _close(iterator) -> None:
    close = getattr(iterator, "close", None)
    if close is not None:
        close()


def train(task: Task, cfg: TrainConfig) -> dict:
    return Trainer(task, cfg).run()
