"""What a render run is asked to do: its options, the --shard slice, the machine it needs,
and how long one image may take before its worker counts as hung."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass

from comco.errors import UserError
from comco.record import PRESET_SAMPLES, PRESETS

DEVICES = ("cpu", "cuda", "optix")


@dataclass(frozen=True)
class RenderOptions:
    preset: str = "cycles"
    device: str = "cpu"
    samples: int | None = None
    workers: int = 1
    max_per_worker: int = 300
    masks: bool = False
    coco: bool = False
    singles: bool = False
    min_pixels: int = 10
    min_visible: float = 0.9
    max_retries: int = 5
    shard: tuple[int, int] = (0, 1)
    threads: int = 0
    image_timeout: float | None = None  # seconds per image; None: from preset and resolution, 0: no limit

    def image_config(self) -> dict:
        """What changes the images (and so the dataset's configuration hash). The samples are
        the ones rendered: a preset's default is written out, so that a change of that default
        can never give a folder the hash of images rendered with another (draft takes none)."""
        samples = self.samples if self.samples is not None or self.preset == "draft" else PRESET_SAMPLES[self.preset]
        return {"preset": self.preset, "samples": samples, "min_pixels": self.min_pixels,
                "min_visible": self.min_visible, "max_retries": self.max_retries, "singles": self.singles,
                "masks": self.masks, "coco": self.coco, "shard": list(self.shard)}


def parse_shard(text: str) -> tuple[int, int]:
    """"i/N" (or "auto" under a SLURM array) -> (i, N), the slice of images this run renders.

    Args:
        text: the --shard value."""
    if text == "auto":
        i_s, n_s = os.environ.get("SLURM_ARRAY_TASK_ID"), os.environ.get("SLURM_ARRAY_TASK_COUNT")
        if i_s is None or n_s is None:
            raise UserError("--shard auto needs SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT in the environment")
        try:
            i, n = int(i_s) - int(os.environ.get("SLURM_ARRAY_TASK_MIN", "0")), int(n_s)
        except ValueError:
            raise UserError("--shard auto: SLURM_ARRAY_TASK_ID, _COUNT and _MIN must be whole numbers") from None
        if not (n >= 1 and 0 <= i < n):
            # a task past the count would render nothing and exit 0; say so instead
            raise UserError(f"--shard auto: task {i} of {n} (SLURM_ARRAY_TASK_ID minus SLURM_ARRAY_TASK_MIN) "
                            "is outside 0..COUNT-1; start the array at its MIN with COUNT tasks")
        return i, n
    try:
        i_s, n_s = text.split("/")
        i, n = int(i_s), int(n_s)
    except ValueError:
        raise UserError(f"--shard {text!r}: write i/N, e.g. 0/4 (or auto under SLURM)") from None
    if not (n >= 1 and 0 <= i < n):
        raise UserError(f"--shard {text}: need 0 <= i < N")
    return i, n


def check_environment(opts: RenderOptions) -> None:
    if sys.version_info[:2] != (3, 11):
        raise UserError(f"comco render needs Python 3.11 for bpy 5.0 (this is {sys.version.split()[0]})")
    if importlib.util.find_spec("bpy") is None:
        raise UserError("bpy is not installed: pip install 'bpy==5.0.*' (Python 3.11) to render")
    if opts.workers < 1:
        raise UserError(f"--workers {opts.workers}: at least 1")
    if opts.image_timeout is not None and not opts.image_timeout >= 0:  # also refuses nan
        raise UserError(f"--image-timeout {opts.image_timeout}: give seconds, at least 0 (0 = no limit)")
    if opts.preset not in PRESETS:
        raise UserError(f"--preset {opts.preset}: use one of {', '.join(PRESETS)}")
    if opts.device not in DEVICES:
        raise UserError(f"--device {opts.device}: use cpu, cuda or optix")
    needs_gpu = opts.device in ("cuda", "optix") or opts.preset == "eevee"
    if needs_gpu and not nvidia_gpu_present():
        what = "--preset eevee" if opts.preset == "eevee" else f"--device {opts.device}"
        raise UserError(f"{what} needs an NVIDIA GPU and none was found; use --device cpu with draft or cycles")


def nvidia_gpu_present() -> bool:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return False
    try:
        return subprocess.run([exe, "-L"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def image_timeout(opts: RenderOptions, resolution: tuple[int, int]) -> float:
    """Seconds one image may take before its worker counts as hung (0 = no limit).

    The default is 20 times a slow estimate (a loaded 2-core CPU: draft 0.5 s, Cycles
    15 s at 24 samples, EEVEE 2 s per 512x512 image, scaled by the samples), and at least two minutes, so that
    only a worker that has stopped answering reaches it."""
    if opts.image_timeout is not None:
        return opts.image_timeout
    megapixels = resolution[0] * resolution[1] / (512 * 512)
    if opts.preset == "draft":
        estimate = 0.5 * megapixels
    elif opts.preset == "eevee":
        estimate = 2.0 * megapixels * (opts.samples or PRESET_SAMPLES["eevee"]) / 32
    else:
        estimate = 15.0 * megapixels * (opts.samples or PRESET_SAMPLES[opts.preset]) / 24
    return max(120.0, 20 * estimate)
