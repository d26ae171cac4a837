"""The float precision a training runs in, and which CPUs compute bf16 natively.

`auto` trains in bf16 autocast on a GPU that has bf16 (fp16 with a loss scaler on one that
has not), and on a CPU whose instruction set multiplies bf16 natively (the x86 flags
avx512_bf16 or amx_bf16 in /proc/cpuinfo: there a one-thread matmul ran 138 GFLOP/s in bf16
against 57 in fp32, and a step of the lab's small conv CLIP is about 1.3x faster,
benchmarks/train.py); on every other CPU in fp32, where bf16 autocast would be emulated and
slower. `fp32` or `bf16` force one. Autocast keeps the weights, the optimiser and the loss
reductions in fp32 and runs matmuls and convolutions in bf16, so the models differ in their
rounding, not in what they learn (docs/reference/reproducibility.md).

torch-free: the lab resolves `auto` before it hashes a stage.
"""

from __future__ import annotations

from pathlib import Path

from comco.errors import UserError

PRECISIONS = ("auto", "fp32", "bf16", "fp16")
BF16_FLAGS = ("avx512_bf16", "amx_bf16")  # x86 instructions that multiply bf16 natively


def cpu_flags(cpuinfo: str | Path = "/proc/cpuinfo") -> list[str]:
    """The CPU's feature flags as the kernel lists them (x86 `flags`, ARM `Features`), sorted;
    empty where there is no /proc/cpuinfo (macOS, Windows)."""
    try:
        text = Path(cpuinfo).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return sorted(set(value.split()))
    return []


def native_bf16(flags: list[str] | None = None) -> bool:
    """Whether the CPU multiplies bf16 in hardware (AVX512_BF16 or AMX_BF16)."""
    flags = cpu_flags() if flags is None else flags
    return any(f in flags for f in BF16_FLAGS)


def cpu_precision(requested: str, flags: list[str] | None = None) -> str:
    """The precision a CPU training runs in: `auto` is bf16 where the CPU has native bf16,
    fp32 elsewhere; fp32 and bf16 as asked. fp16 autocast needs a GPU."""
    if requested not in PRECISIONS:
        raise UserError(f"precision {requested!r}: one of {', '.join(PRECISIONS)}")
    if requested == "fp16":
        raise UserError("precision fp16 needs a GPU (its loss scaler is CUDA's); on a CPU use bf16 or fp32")
    if requested == "auto":
        return "bf16" if native_bf16(flags) else "fp32"
    return requested
