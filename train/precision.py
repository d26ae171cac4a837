"""The float precision a training runs in, and which CPUs compute bf16 natively.

`auto` trains in bf16 autocast on a GPU that has bf16 (fp16 with a loss scaler on one that
has not). On a CPU it trains a scratch CLIP in bf16 autocast where the CPU multiplies bf16
natively (the x86 flags avx512_bf16 or amx_bf16 in /proc/cpuinfo): on an EPYC (issue 39) a one-thread matmul
ran 138 GFLOP/s in bf16 against 57 in fp32, and a step of the lab's small conv CLIP at batch
64 is 1.2-1.36x faster (benchmarks/train.py, section 6). Everything else on a CPU trains in
fp32: CPUs without native bf16 would only emulate it, and the fine-tunes (Long-CLIP, DeBias
at batch 32) and the LABCLIP map measured slower in bf16 on the same machine (a Long-CLIP step
of the lab's conv model 592/454 ms in fp32 against 634/652 in bf16, DeBias 815/685 against
1043/938: the casts cost more than the small matmuls gain). `fp32` or `bf16` force one.
Autocast keeps the weights, the optimiser and the loss reductions in fp32 and runs matmuls
and convolutions in bf16, so the models differ in their rounding, not in what they learn
(docs/reference/reproducibility.md).

torch-free: the lab resolves `auto` before it hashes a stage.
"""

from __future__ import annotations

from pathlib import Path

from comco.errors import UserError

PRECISIONS = ("auto", "fp32", "bf16", "fp16")
BF16_FLAGS = ("avx512_bf16", "amx_bf16")  # x86 instructions that multiply bf16 natively
BF16_KINDS = ("scratch",)  # the training kinds `auto` runs in bf16 on such a CPU (measured faster)


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


def cpu_precision(requested: str, flags: list[str] | None = None, kind: str = "scratch") -> str:
    """The precision a CPU training of `kind` runs in: `auto` is bf16 for the BF16_KINDS where
    the CPU has native bf16, fp32 otherwise; fp32 and bf16 as asked. fp16 needs a GPU."""
    if requested not in PRECISIONS:
        raise UserError(f"precision {requested!r}: one of {', '.join(PRECISIONS)}")
    if requested == "fp16":
        raise UserError("precision fp16 needs a GPU (its loss scaler is CUDA's); on a CPU use bf16 or fp32")
    if requested == "auto":
        return "bf16" if kind in BF16_KINDS and native_bf16(flags) else "fp32"
    return requested
