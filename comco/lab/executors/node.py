"""`--executor node`: one machine with several GPUs, each stage in its own process.

A stage that runs on a GPU gets one through CUDA_VISIBLE_DEVICES: a render (Cycles)
takes a whole device; a training or a probe shares one with others while their memory
estimates fit in it. A CPU-only stage (device "cpu", or a machine without GPUs) runs on
the cores the GPU stages leave (one core feeds each GPU stage). What a stage prints goes
to OUT/stages/<id>/logs/node.log.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from comco.errors import UserError
from comco.io import write_json
from comco.lab.executors.base import LOGS, Executor, Outcome, StageCall, StageFailed, log_tail

GPU_KINDS = ("render", "scratch", "finetune", "labclip", "probe")
FEED_CORES = 1  # cores a GPU stage keeps busy (its data loading and launches)
MEMORY_FLOOR_GIB = 2.0  # the CUDA context and the weights of a model this small
POLL_S = 0.5


@dataclass(frozen=True)
class Device:
    index: int
    memory_gib: float


@dataclass(frozen=True)
class Request:
    gpu: bool  # needs one GPU
    exclusive: bool  # takes the whole GPU (a Cycles render)
    memory_gib: float
    cores: int


def detect_devices() -> list[Device]:
    """The GPUs `nvidia-smi` lists (none where it is missing or fails)."""
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        text = subprocess.run(["nvidia-smi", "--query-gpu=index,memory.total", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    devices = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0].isdigit():
            devices.append(Device(int(parts[0]), float(parts[1]) / 1024))
    return devices


def memory_estimate_gib(call: StageCall) -> float:
    """A training's or a probe's GPU memory: activations of one batch of a transformer of
    this width and depth (16 floats per token and channel and layer) on a floor."""
    c = call.config
    size = c.get("prior") or c
    width, layers = size.get("width", 256), size.get("layers", 6)
    res, patch = size.get("resolution", 224), size.get("patch_size", 16)
    tokens = (res // max(1, patch)) ** 2 + size.get("context_length", 77)
    batch = c.get("batch_size", 256)
    return MEMORY_FLOOR_GIB + batch * tokens * width * layers * 16 * 4 / 2**30


def stage_request(call: StageCall, have_gpus: bool) -> Request:
    c = call.config
    if call.kind == "render":
        on_gpu = c.get("device") in ("cuda", "optix")
        return Request(on_gpu and have_gpus, True, 0.0, FEED_CORES if on_gpu else max(1, call.threads))
    on_gpu = call.kind in GPU_KINDS and c.get("device", "auto") in ("auto", "cuda") and have_gpus
    if on_gpu:
        return Request(True, False, memory_estimate_gib(call), FEED_CORES)
    return Request(False, False, 0.0, max(1, call.threads))


class Placement:
    """Which device each running stage holds, and how much of it; pure bookkeeping (tested
    with a fake device list)."""

    def __init__(self, devices: list[Device], cores: int):
        self.devices = devices
        self.cores = cores
        self.used_memory = {d.index: 0.0 for d in devices}
        self.holders = {d.index: 0 for d in devices}
        self.exclusive: set[int] = set()
        self.used_cores = 0
        self._held: dict[str, tuple[int | None, Request]] = {}

    def place(self, sid: str, req: Request) -> int | None | bool:
        """The device index for this stage (None: CPU), or False when it must wait."""
        if self.used_cores + req.cores > self.cores and self._held:
            return False
        device = None
        if req.gpu:
            fits = [d for d in self.devices if d.index not in self.exclusive
                    and (not req.exclusive or self.holders[d.index] == 0)
                    and (self.holders[d.index] == 0 or self.used_memory[d.index] + req.memory_gib <= d.memory_gib)]
            if not fits:
                return False
            # the least loaded device that fits: stages spread before they share
            device = min(fits, key=lambda d: (self.holders[d.index], self.used_memory[d.index], d.index)).index
            self.holders[device] += 1
            self.used_memory[device] += req.memory_gib
            if req.exclusive:
                self.exclusive.add(device)
        self.used_cores += req.cores
        self._held[sid] = (device, req)
        return device

    def release(self, sid: str) -> None:
        device, req = self._held.pop(sid)
        self.used_cores -= req.cores
        if device is not None:
            self.holders[device] -= 1
            self.used_memory[device] -= req.memory_gib
            self.exclusive.discard(device)


class NodeExecutor(Executor):
    name = "node"
    inline_kinds = frozenset({"captions", "report"})

    def __init__(self, out: Path, devices: list[Device], cores: int, jobs: int):
        self.out = Path(out)
        self.placement = Placement(devices, cores)
        self.jobs = jobs
        self._procs: dict[str, tuple[StageCall, subprocess.Popen]] = {}
        self._waiting: list[StageCall] = []  # started by the loop, not yet placed

    def describe(self, jobs: int, threads: int) -> str:
        gpus = ", ".join(f"{d.index} ({d.memory_gib:.0f} GiB)" for d in self.placement.devices) or "none"
        return f"one process per stage on GPUs {gpus} and {self.placement.cores} cores, at most {jobs} at a time"

    def free(self) -> int:
        return 0 if self._waiting else self.jobs - len(self._procs)

    def busy(self) -> int:
        return len(self._procs) + len(self._waiting)

    def start(self, calls: list[StageCall]) -> None:
        self._waiting.extend(calls)
        self._launch_what_fits()

    def _launch_what_fits(self) -> None:
        have = bool(self.placement.devices)
        for call in list(self._waiting):
            device = self.placement.place(call.id, stage_request(call, have))
            if device is False:
                continue
            self._waiting.remove(call)
            self._procs[call.id] = (call, self._spawn(call, device))

    def _spawn(self, call: StageCall, device: int | None) -> subprocess.Popen:
        logs = Path(call.out) / LOGS
        logs.mkdir(parents=True, exist_ok=True)
        spec = logs / "node-call.json"
        write_json(spec, {"call": call.__dict__, "result": str(logs / "node-result.json")})
        (logs / "node-result.json").unlink(missing_ok=True)
        # nvidia-smi numbers GPUs by PCI bus; CUDA numbers them so too only when asked
        env = {**os.environ, "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
               "CUDA_VISIBLE_DEVICES": "" if device is None else str(device)}
        log = open(logs / "node.log", "ab")
        try:
            return subprocess.Popen([sys.executable, "-m", "comco.lab.executors.worker", str(spec)], env=env,
                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        finally:
            log.close()

    def wait(self) -> list[Outcome]:
        while True:
            out = []
            for sid, (call, proc) in list(self._procs.items()):
                if proc.poll() is None:
                    continue
                del self._procs[sid]
                self.placement.release(sid)
                logs = Path(call.out) / LOGS
                result = logs / "node-result.json"
                if proc.returncode == 0 and result.is_file():
                    r = json.loads(result.read_text(encoding="utf-8"))
                    out.append(Outcome(sid, r["summary"], r["seconds"]))
                else:
                    tail = log_tail(logs / "node.log")
                    message = (f"stage {sid} failed (exit {proc.returncode}); the last lines of {logs / 'node.log'}:\n"
                               + "\n".join(f"    {line}" for line in tail))
                    out.append(Outcome(sid, error=StageFailed(message), log_tail=tail))
            self._launch_what_fits()
            if out:
                return out
            time.sleep(POLL_S)

    def abort(self) -> None:
        for _, proc in self._procs.values():
            if proc.poll() is None:
                proc.terminate()
        for _, proc in self._procs.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def node_devices(gpus: int | None, settings: dict) -> list[Device]:
    """The devices this run may use: the first `gpus` of the machine's (all by default);
    asking for more than it has, or a recipe that needs CUDA on a machine without, is a UserError."""
    devices = detect_devices()
    if gpus is not None and gpus > len(devices):
        raise UserError(f"--gpus {gpus}: this machine has {len(devices)} GPU(s) (nvidia-smi); ask for at most "
                        f"{len(devices)}, or use --executor local")
    wants_cuda = settings["run"]["device"] == "cuda" or settings["render"]["device"] in ("cuda", "optix")
    if wants_cuda and not devices:
        raise UserError("the recipe asks for CUDA (run.device / render.device) and this machine has no GPU "
                        "(nvidia-smi); set them to cpu / auto, or run where there are GPUs")
    return devices if gpus is None else devices[:gpus]
