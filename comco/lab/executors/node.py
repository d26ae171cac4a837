"""`--executor node`: one machine with several GPUs, each stage in its own process.

A stage that runs on a GPU gets its devices through CUDA_VISIBLE_DEVICES: a render
(Cycles) takes a whole device; a training or a probe shares one with others while their
memory estimates fit in it; with `[run.node] train_gpus = k` (k > 1) a scratch or fine-tune
training takes k whole devices and runs as k DDP processes under torchrun. A CPU-only stage
(device "cpu", or a machine without GPUs) runs on the cores the GPU stages leave (one core
feeds each GPU process). What a stage prints goes to OUT/stages/<id>/logs/node.log.

The first stage that needs whole devices and finds too few empty reserves the devices it
waits for: no other stage is placed on them until they drain and it starts, so a DDP group
is never starved by single stages that keep arriving (they go on the other devices). One
reservation at a time: the next stage to wait reserves when this one has started.
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
GROUP_KINDS = ("scratch", "finetune")  # the trainings [run.node] train_gpus spreads over a DDP group
FEED_CORES = 1  # cores a GPU stage keeps busy (its data loading and launches)
MEMORY_FLOOR_GIB = 2.0  # the CUDA context and the weights of a model this small
POLL_S = 0.5


@dataclass(frozen=True)
class Device:
    index: int
    memory_gib: float


@dataclass(frozen=True)
class Request:
    gpus: int  # GPUs it needs: 0 (CPU), 1, or k for a DDP group
    exclusive: bool  # takes whole GPUs (a Cycles render, a DDP group)
    memory_gib: float  # on each of its GPUs
    cores: int

    @property
    def gpu(self) -> bool:
        return self.gpus > 0


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


def memory_estimate_gib(call: StageCall, processes: int = 1) -> float:
    """A training's or a probe's GPU memory: activations of one batch of a transformer of
    this width and depth (16 floats per token and channel and layer) on a floor; a DDP
    process holds its share of the batch."""
    c = call.config
    size = c.get("prior") or c
    width, layers = size.get("width", 256), size.get("layers", 6)
    res, patch = size.get("resolution", 224), size.get("patch_size", 16)
    tokens = (res // max(1, patch)) ** 2 + size.get("context_length", 77)
    batch = c.get("batch_size", 256) / processes
    return MEMORY_FLOOR_GIB + batch * tokens * width * layers * 16 * 4 / 2**30


def stage_request(call: StageCall, have_gpus: bool, train_gpus: int = 1) -> Request:
    """What a stage needs of the node; `train_gpus` ([run.node]) is the size of a training's DDP group."""
    c = call.config
    if call.kind == "render":
        on_gpu = c.get("device") in ("cuda", "optix") and have_gpus
        return Request(int(on_gpu), True, 0.0, FEED_CORES if on_gpu else max(1, call.threads))
    on_gpu = call.kind in GPU_KINDS and c.get("device", "auto") in ("auto", "cuda") and have_gpus
    if on_gpu and call.kind in GROUP_KINDS and train_gpus > 1:
        return Request(train_gpus, True, memory_estimate_gib(call, train_gpus), train_gpus * FEED_CORES)
    if on_gpu:
        return Request(1, False, memory_estimate_gib(call), FEED_CORES)
    return Request(0, False, 0.0, max(1, call.threads))


class Placement:
    """Which devices each running stage holds, and how much of them; pure bookkeeping (tested
    with a fake device list)."""

    def __init__(self, devices: list[Device], cores: int):
        self.devices = devices
        self.cores = cores
        self.used_memory = {d.index: 0.0 for d in devices}
        self.holders = {d.index: 0 for d in devices}
        self.exclusive: set[int] = set()
        self.used_cores = 0
        self.reserved: dict[str, tuple[int, ...]] = {}  # the waiting whole-device stage -> the devices it holds back
        self._held: dict[str, tuple[tuple[int, ...], Request]] = {}

    def place(self, sid: str, req: Request) -> tuple[int, ...] | None:
        """The device indices for this stage (empty: the CPU), or None when it must wait."""
        if self.used_cores + req.cores > self.cores and self._held:
            return None
        devices: tuple[int, ...] = ()
        if req.gpu:
            devices = self._whole(sid, req) if req.exclusive else self._shared(sid, req)
            if devices is None:
                return None
            for d in devices:
                self.holders[d] += 1
                self.used_memory[d] += req.memory_gib
                if req.exclusive:
                    self.exclusive.add(d)
        self.used_cores += req.cores
        self._held[sid] = (devices, req)
        return devices

    def _held_back(self, sid: str) -> set[int]:
        """Devices other waiting stages have reserved."""
        return {d for other, ds in self.reserved.items() if other != sid for d in ds}

    def _shared(self, sid: str, req: Request) -> tuple[int, ...] | None:
        barred = self._held_back(sid)
        fits = [d for d in self.devices if d.index not in self.exclusive and d.index not in barred
                and (self.holders[d.index] == 0 or self.used_memory[d.index] + req.memory_gib <= d.memory_gib)]
        if not fits:
            return None
        # the least loaded device that fits: stages spread before they share
        return (min(fits, key=lambda d: (self.holders[d.index], self.used_memory[d.index], d.index)).index,)

    def _whole(self, sid: str, req: Request) -> tuple[int, ...] | None:
        """`req.gpus` empty devices. When too few are empty, the first stage to wait so reserves
        the ones it waits for (the least loaded, kept until it starts), so the stages that keep
        arriving cannot take them as they drain; one reservation at a time, so the stages that
        wait start in the order they began to wait."""
        barred = self._held_back(sid)
        mine = self.reserved.get(sid, ())
        empty = [d.index for d in self.devices if self.holders[d.index] == 0 and d.index not in barred]
        if len(empty) >= req.gpus:
            self.reserved.pop(sid, None)
            return tuple(sorted(empty, key=lambda i: (i not in mine, i))[:req.gpus])  # its own first
        if not self.reserved:
            best = sorted(self.devices, key=lambda d: (self.holders[d.index], self.used_memory[d.index], d.index))
            self.reserved[sid] = tuple(sorted(d.index for d in best[:req.gpus]))
        return None

    def release(self, sid: str) -> None:
        devices, req = self._held.pop(sid)
        self.used_cores -= req.cores
        for d in devices:
            self.holders[d] -= 1
            self.used_memory[d] -= req.memory_gib
            self.exclusive.discard(d)


def launch(call: StageCall, devices: tuple[int, ...], spec: Path) -> tuple[list[str], dict]:
    """The command and environment that run one stage on these devices: the stage worker, or
    for a group of k devices k workers under torchrun (one per GPU: LOCAL_RANK i uses
    cuda:i of CUDA_VISIBLE_DEVICES, comco.train.distributed.setup; WORLD_SIZE k). --standalone
    takes a free port, so groups side by side do not meet."""
    # nvidia-smi numbers GPUs by PCI bus; CUDA numbers them so too only when asked
    env = {**os.environ, "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": ",".join(map(str, devices))}
    worker = ["-m", "comco.lab.executors.worker", str(spec)]
    if len(devices) > 1:
        return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1",
                f"--nproc-per-node={len(devices)}", *worker], env
    return [sys.executable, *worker], env


class NodeExecutor(Executor):
    name = "node"
    inline_kinds = frozenset({"captions", "report"})

    def __init__(self, out: Path, devices: list[Device], cores: int, jobs: int, train_gpus: int = 1):
        self.out = Path(out)
        self.placement = Placement(devices, cores)
        self.jobs = jobs
        self.train_gpus = train_gpus
        self._procs: dict[str, tuple[StageCall, subprocess.Popen]] = {}
        self._waiting: list[StageCall] = []  # started by the loop, not yet placed

    def describe(self, jobs: int, threads: int) -> str:
        gpus = ", ".join(f"{d.index} ({d.memory_gib:.0f} GiB)" for d in self.placement.devices) or "none"
        group = f", trainings on {self.train_gpus} GPUs each (DDP)" if self.train_gpus > 1 else ""
        return (f"one process per stage on GPUs {gpus} and {self.placement.cores} cores{group}, at most {jobs} "
                "at a time")

    def free(self) -> int:
        # stages keep coming while some wait: what waits for whole GPUs has reserved them
        return self.jobs - len(self._procs) - len(self._waiting)

    def busy(self) -> int:
        return len(self._procs) + len(self._waiting)

    def start(self, calls: list[StageCall]) -> None:
        self._waiting.extend(calls)
        self._launch_what_fits()

    def _launch_what_fits(self) -> None:
        have = bool(self.placement.devices)
        for call in list(self._waiting):
            devices = self.placement.place(call.id, stage_request(call, have, self.train_gpus))
            if devices is None:
                continue
            self._waiting.remove(call)
            self._procs[call.id] = (call, self._spawn(call, devices))

    def _spawn(self, call: StageCall, devices: tuple[int, ...]) -> subprocess.Popen:
        logs = Path(call.out) / LOGS
        logs.mkdir(parents=True, exist_ok=True)
        spec = logs / "node-call.json"
        write_json(spec, {"call": call.__dict__, "result": str(logs / "node-result.json")})
        (logs / "node-result.json").unlink(missing_ok=True)
        command, env = launch(call, devices, spec)
        log = open(logs / "node.log", "ab")
        try:
            return subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
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
    asking for more than it has, a recipe that needs CUDA on a machine without, or a DDP
    group larger than the devices, is a UserError."""
    devices = detect_devices()
    if gpus is not None and gpus > len(devices):
        raise UserError(f"--gpus {gpus}: this machine has {len(devices)} GPU(s) (nvidia-smi); ask for at most "
                        f"{len(devices)}, or use --executor local")
    wants_cuda = settings["run"]["device"] == "cuda" or settings["render"]["device"] in ("cuda", "optix")
    if wants_cuda and not devices:
        raise UserError("the recipe asks for CUDA (run.device / render.device) and this machine has no GPU "
                        "(nvidia-smi); set them to cpu / auto, or run where there are GPUs")
    devices = devices if gpus is None else devices[:gpus]
    check_train_gpus(settings, len(devices), f"--gpus {gpus}" if gpus is not None else "nvidia-smi")
    return devices


def check_train_gpus(settings: dict, have: int, source: str) -> None:
    """[run.node] train_gpus fits in the GPUs the run may use (a group larger would wait forever)."""
    k = settings["run"]["node"].get("train_gpus", 1)
    if k > 1 and k > have:
        raise UserError(f"recipe key 'run.node.train_gpus' = {k}: this run has {have} GPU(s) ({source}); "
                        f"ask for at most {have}, or leave the key out (one GPU per training)")
