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
    assert p.place("r0", render(0)) == 0
    assert p.place("r1", render(1)) == 1
    assert p.place("r2", render(2)) is False  # both GPUs held by a Cycles render
    assert p.place("t", stage_request(train("t"), True)) is False  # nor does a training share one
    p.release("r1")
    assert p.place("r2", render(2)) == 1


def test_small_stages_share_a_gpu_by_their_memory_estimates_and_spread_first():
    est = memory_estimate_gib(train("a"))
    assert 2 < est < 20  # the full scale's model at batch 256: a few GiB on the floor
    per_gpu = int(40 // est)  # how many fit in a 40 GiB device
    p = Placement([Device(0, 40), Device(1, 40)], cores=64)
    placed = [p.place(f"t{i}", stage_request(train(f"t{i}"), True)) for i in range(2 * per_gpu + 1)]
    assert placed[:2] == [0, 1]  # one per GPU before any two share
    assert sorted(placed[:2 * per_gpu]) == [0] * per_gpu + [1] * per_gpu
    assert placed[-1] is False  # the next one does not fit in what is left
    assert max(p.used_memory.values()) <= 40
    # a bigger batch needs more memory
    assert memory_estimate_gib(train("b", batch=512)) > est


def test_cpu_stages_run_on_the_cores_the_gpu_stages_leave():
    p = Placement([Device(0, 80)], cores=4)
    assert p.place("t", stage_request(train("t"), True)) == 0  # a GPU stage keeps one core busy
    cpu = lambda sid: stage_request(call(sid, "scratch", device="cpu"), True)  # noqa: E731
    assert [p.place(f"c{i}", cpu(f"c{i}")) for i in range(4)] == [None, None, None, False]
    p.release("t")
    assert p.place("c3", cpu("c3")) is None
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
