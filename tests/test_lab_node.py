"""`--executor node`: stages placed on the GPUs of one machine (a fake device list), CPU-only
stages on the cores left, and a run whose files match the local pool's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.labrun import fake_gpus

from comco.lab.executors.base import StageCall
from comco.lab.executors.node import Device, Placement, memory_estimate_gib, stage_request


def call(sid: str, kind: str, **config) -> StageCall:
    return StageCall(sid, kind, config, {}, f"/tmp/{sid}", 1, "h")


def train(sid: str, batch: int = 256, width: int = 256) -> StageCall:
    return call(sid, "scratch", device="auto", batch_size=batch, width=width, layers=6, resolution=224,
                patch_size=16, context_length=77)


def test_renders_take_a_whole_gpu_each_and_wait_when_none_is_free():
    p = Placement([Device(0, 80), Device(1, 80)], cores=16)
    render = lambda i: stage_request(call(f"r{i}", "render", device="optix", threads=1), True)  # noqa: E731
    assert p.place("r0", render(0)) == (0,)
    assert p.place("r1", render(1)) == (1,)
    assert p.place("r2", render(2)) is None  # both GPUs held by a Cycles render
    assert p.place("t", stage_request(train("t"), True)) is None  # nor does a training share one
    p.release("r1")
    assert p.place("r2", render(2)) == (1,)


def test_small_stages_share_a_gpu_by_their_memory_estimates_and_spread_first():
    est = memory_estimate_gib(train("a"))
    assert 2 < est < 20  # the full scale's model at batch 256: a few GiB on the floor
    per_gpu = int(40 // est)  # how many fit in a 40 GiB device
    p = Placement([Device(0, 40), Device(1, 40)], cores=64)
    placed = [p.place(f"t{i}", stage_request(train(f"t{i}"), True)) for i in range(2 * per_gpu + 1)]
    assert placed[:2] == [(0,), (1,)]  # one per GPU before any two share
    assert sorted(placed[:2 * per_gpu]) == [(0,)] * per_gpu + [(1,)] * per_gpu
    assert placed[-1] is None  # the next one does not fit in what is left
    assert max(p.used_memory.values()) <= 40
    # a bigger batch needs more memory
    assert memory_estimate_gib(train("b", batch=512)) > est


def test_cpu_stages_run_on_the_cores_the_gpu_stages_leave():
    p = Placement([Device(0, 80)], cores=4)
    assert p.place("t", stage_request(train("t"), True)) == (0,)  # a GPU stage keeps one core busy
    cpu = lambda sid: stage_request(call(sid, "scratch", device="cpu"), True)  # noqa: E731
    assert [p.place(f"c{i}", cpu(f"c{i}")) for i in range(4)] == [(), (), (), None]  # () is the CPU
    p.release("t")
    assert p.place("c3", cpu("c3")) == ()
    # without GPUs a stage that would use one runs on the CPU
    assert not stage_request(train("t"), False).gpu and not stage_request(call("r", "render", device="cuda"), False).gpu


def test_a_stage_is_given_its_device_in_cuda_visible_devices(tmp_path, monkeypatch):
    """The node executor starts each stage in its own process with its device."""
    from comco.lab.executors import node

    seen = {}

    class FakePopen:
        def __init__(self, cmd, env, **kw):
            seen[json.loads(Path(cmd[-1]).read_text())["call"]["id"]] = env["CUDA_VISIBLE_DEVICES"]

        def poll(self):
            return None

    monkeypatch.setattr(node.subprocess, "Popen", FakePopen)
    ex = node.NodeExecutor(tmp_path, [Device(0, 80), Device(1, 80)], cores=8, jobs=8)
    calls = [StageCall(f"s{i}", "scratch", train(f"s{i}").config, {}, str(tmp_path / f"s{i}"), 1, "h")
             for i in range(3)]
    calls.append(StageCall("c", "captions", {}, {}, str(tmp_path / "c"), 1, "h"))
    ex.start(calls)
    assert seen == {"s0": "0", "s1": "1", "s2": "0", "c": ""}


@pytest.mark.bpy
def test_node_runs_the_graph_with_the_local_results(tmp_path):
    pytest.importorskip("bpy")
    from support.labrun import lab, same_data, stage_hashes, tiny_recipe

    recipe = tiny_recipe(tmp_path)
    local, node_out = tmp_path / "local", tmp_path / "node"
    lab(recipe, local)
    lab(recipe, node_out, "--executor", "node", env=fake_gpus(tmp_path / "bin", 2))  # smoke: device cpu
    assert stage_hashes(node_out) == stage_hashes(local)
    same_data(node_out, local)
    log = node_out / "stages" / "render-train-simco" / "logs" / "node.log"
    assert log.is_file()


def test_gpus_asked_of_a_machine_without_them_is_one_line(tmp_path):
    recipe = Path(__file__).resolve().parent.parent / "recipes" / "order-bias.toml"
    r = subprocess.run([sys.executable, "-m", "comco.cli", "lab", "run", str(recipe), "--scale", "smoke", "--out",
                        str(tmp_path / "out"), "--executor", "node", "--gpus", "2"], capture_output=True, text=True,
                       timeout=120, env=fake_gpus(tmp_path / "bin", 0))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "--gpus 2" in r.stderr and "0 GPU" in r.stderr
    assert not (tmp_path / "out").exists()


def test_a_recipe_that_renders_on_cuda_on_a_machine_without_gpus_is_one_line(tmp_path):
    text = (Path(__file__).resolve().parent.parent / "recipes" / "order-bias.toml").read_text(encoding="utf-8")
    old = '[scales.smoke.render]\npreset = "draft"\nresolution = 32\ndevice = "cpu"'
    assert text.count(old) == 1
    recipe = tmp_path / "cuda.toml"
    recipe.write_text(text.replace(old, old.replace('"cpu"', '"optix"')), encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "comco.cli", "lab", "run", str(recipe), "--scale", "smoke", "--out",
                        str(tmp_path / "out"), "--executor", "node"], capture_output=True, text=True,
                       timeout=120, env=fake_gpus(tmp_path / "bin", 0))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr[-2000:]
    assert "asks for CUDA" in r.stderr and "no GPU" in r.stderr
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- DDP groups ([run.node] train_gpus)

def group(sid: str, k: int = 2):
    return stage_request(train(sid), True, k)


def test_a_training_asks_for_k_whole_gpus_and_nothing_else_shares_them():
    req = group("g", 2)
    assert (req.gpus, req.exclusive, req.cores) == (2, True, 2)
    assert req.memory_gib < memory_estimate_gib(train("g"))  # each process holds half the batch
    assert stage_request(train("g"), True, 1).gpus == 1 and not stage_request(train("g"), True, 1).exclusive
    # only the trainings form groups; a probe, LABCLIP or a CPU training do not
    assert stage_request(call("p", "probe", device="auto"), True, 2).gpus == 1
    assert stage_request(call("l", "labclip", device="auto"), True, 2).gpus == 1
    assert stage_request(call("c", "scratch", device="cpu"), True, 2).gpus == 0
    p = Placement([Device(i, 80) for i in range(3)], cores=64)
    assert p.place("g", req) == (0, 1)
    single = stage_request(train("s"), True)
    assert p.place("s", single) == (2,) and p.place("s2", single) == (2,)  # singles share the third
    assert p.place("h", group("h")) is None  # a second group waits
    p.release("g")
    assert p.place("h", group("h")) == (0, 1)


def test_a_waiting_group_gets_its_gpus_while_singles_keep_arriving():
    """Every GPU holds a single; whenever one ends another arrives. Without the reservation the
    newcomer takes the GPU that just drained (the least loaded) and the group waits forever."""
    p = Placement([Device(i, 80) for i in range(3)], cores=64)
    single = stage_request(train("s"), True)
    running = [f"s{i}" for i in range(3)]
    assert [p.place(sid, single) for sid in running] == [(0,), (1,), (2,)]
    assert p.place("g", group("g")) is None
    assert p.reserved == {"g": (0, 1)}
    placed, n = None, 3
    for _ in range(10):
        p.release(running.pop(0))  # the oldest single ends ...
        placed = p.place("g", group("g"))  # the group, waiting first, is tried first (as the executor does)
        if placed is not None:
            break
        new = f"s{n}"
        n += 1
        where = p.place(new, single)  # ... and a new one arrives: it goes beside, not on a reserved GPU
        assert where == (2,), where
        running.append(new)
    assert placed == (0, 1) and "g" not in p.reserved
    assert p.place("late", single) == (2,)  # the group's GPUs are its own while it runs


def test_a_group_is_launched_under_torchrun_with_its_devices(tmp_path):
    from comco.lab.executors.node import launch

    spec = tmp_path / "node-call.json"
    cmd, env = launch(train("g"), (2, 5), spec)
    assert cmd[:3] == [sys.executable, "-m", "torch.distributed.run"]
    assert "--standalone" in cmd and "--nproc-per-node=2" in cmd and "--nnodes=1" in cmd
    assert cmd[-3:] == ["-m", "comco.lab.executors.worker", str(spec)]
    assert env["CUDA_VISIBLE_DEVICES"] == "2,5" and env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    cmd, env = launch(train("s"), (3,), spec)
    assert cmd == [sys.executable, "-m", "comco.lab.executors.worker", str(spec)] and env["CUDA_VISIBLE_DEVICES"] == "3"
    assert launch(train("c"), (), spec)[1]["CUDA_VISIBLE_DEVICES"] == ""


def test_the_node_executor_starts_a_group_on_k_gpus_and_the_next_waits(tmp_path, monkeypatch):
    from comco.lab.executors import node

    seen, ended = {}, set()

    class FakePopen:
        def __init__(self, cmd, env, **kw):
            self.id = json.loads(Path(cmd[-1]).read_text())["call"]["id"]
            seen[self.id] = (env["CUDA_VISIBLE_DEVICES"], cmd)
            self.returncode = None

        def poll(self):
            self.returncode = 0 if self.id in ended else None
            return self.returncode

    monkeypatch.setattr(node.subprocess, "Popen", FakePopen)
    ex = node.NodeExecutor(tmp_path, [Device(i, 80) for i in range(4)], cores=16, jobs=8, train_gpus=2)
    calls = [StageCall(f"t{i}", "scratch", train(f"t{i}").config, {}, str(tmp_path / f"t{i}"), 1, "h")
             for i in range(3)]
    calls.append(StageCall("p", "probe", {"device": "auto"}, {}, str(tmp_path / "p"), 1, "h"))
    ex.start(calls)
    assert seen["t0"][0] == "0,1" and seen["t1"][0] == "2,3" and "--nproc-per-node=2" in seen["t0"][1]
    assert "t2" not in seen and "p" not in seen  # every GPU is a group's alone
    assert ex.placement.reserved == {"t2": (0, 1)} and ex.busy() == 4 and ex.free() == 4
    ended.add("t1")
    assert [o.id for o in ex.wait()] == ["t1"]
    assert seen["t2"][0] == "2,3" and ex.placement.reserved == {}  # two GPUs drained: it took them
    assert "p" not in seen
    ended.update({"t0"})
    ex.wait()
    assert seen["p"][0] == "0" and "torch.distributed.run" not in seen["p"][1]


@pytest.mark.torch
@pytest.mark.slow  # three torch processes and two short trainings: 4 min on the loaded 2-core machine
def test_a_two_process_ddp_training_through_the_node_executor_matches_one_process(tmp_path):
    """The real launch on the CPU: torchrun starts two workers that join a gloo group (the fake
    GPUs are not CUDA devices, so "auto" resolves to the CPU) and train the stage as one
    process with the whole batch does. Fast companions: the launch command and the
    placement tests above."""
    pytest.importorskip("torch")
    import torch
    from support.train import make_dataset

    from comco.lab.executors import node
    from comco.models import load_checkpoint

    make_dataset(tmp_path / "render" / "data", n=24)
    config = {"captions": ["and"], "resolution": 32, "patch_size": 8, "context_length": 16, "width": 64, "layers": 1,
              "tower": "vit", "seed": 0, "steps": 3, "batch_size": 12, "lr": 1e-3, "device": "auto", "warmup": 1,
              "weight_decay": 0.1}
    models = {}
    for k in (2, 1):
        out = tmp_path / f"k{k}"
        ex = node.NodeExecutor(tmp_path, [Device(0, 80), Device(1, 80)], cores=4, jobs=2, train_gpus=k)
        ex.start([StageCall(f"scratch-k{k}", "scratch", config, {"data": str(tmp_path / "render")}, str(out), 1, "h")])
        outcomes = []
        while ex.busy():
            outcomes += ex.wait()
        assert [o.failed for o in outcomes] == [False], outcomes[0].error
        result = json.loads((out / "logs" / "node-result.json").read_text())
        assert result.get("processes", 1) == k and result["summary"]["steps"] == 3
        if k == 2:
            assert result["backend"] == "gloo"
            assert json.loads((out / "logs" / "node-call.json").read_text())["call"]["id"] == "scratch-k2"
        models[k] = load_checkpoint(out / "model.pt")["state_dict"]
    for key, value in models[1].items():
        assert torch.allclose(value, models[2][key], atol=2e-5), key
