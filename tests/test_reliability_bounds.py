"""Issue 16 item 14: out-of-range options end with one UserError before any work, never a hang,
a struct.error, a silent 'rendered nothing' or a quietly wrong slice."""

import json

import pytest

from comco.errors import UserError


def _plan_config(**changes):
    from comco.plan import PlanConfig

    return PlanConfig(**{"object_set": "simco", "n": 5, **changes})


@pytest.mark.parametrize("changes, words", [
    ({"n": 10**12}, "--n"),
    ({"seed": 2**63}, "2**63-1"),
    ({"seed": -1}, "--seed"),
    ({"orders": 100000}, "--orders"),
    ({"objects": (2, 3), "orders": 121}, "--orders"),
    ({"small_fraction": (0.01, 0.005)}, "backwards"),
])
def test_plan_bounds_are_refused_before_planning(changes, words):
    from comco.manifest import load_object_set
    from comco.plan import check_config

    with pytest.raises(UserError, match=words.replace("*", r"\*")):
        check_config(_plan_config(**changes), load_object_set("simco"))


def test_the_largest_allowed_values_still_plan():
    from comco.manifest import load_object_set
    from comco.plan import Planner

    planner = Planner(_plan_config(objects=(5,), orders=120, seed=2**63 - 1), load_object_set("simco"))
    rec = planner.plan(0)
    assert len(rec["mention_orders"]) == 120
    assert len({tuple(o) for o in rec["mention_orders"]}) > 1


@pytest.mark.parametrize("env", [
    {"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_COUNT": "4"},  # past the count
    {"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "3"},  # before the start
    {"SLURM_ARRAY_TASK_ID": "x", "SLURM_ARRAY_TASK_COUNT": "4"},
])
def test_shard_auto_outside_the_array_is_refused(monkeypatch, env):
    from comco.render import parse_shard

    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(UserError, match="--shard auto"):
        parse_shard("auto")


def test_shard_auto_inside_the_array(monkeypatch):
    from comco.render import parse_shard

    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "5")
    monkeypatch.setenv("SLURM_ARRAY_TASK_COUNT", "4")
    monkeypatch.setenv("SLURM_ARRAY_TASK_MIN", "2")
    assert parse_shard("auto") == (3, 4)


@pytest.mark.parametrize("given, flag", [
    ({"lr": float("nan")}, "--lr"), ({"epochs": float("nan")}, "--epochs"), ({"epochs": float("inf")}, "--epochs"),
    ({"weight_decay": -0.1}, "--weight-decay"), ({"warmup": -1}, "--warmup"),
    ({"label_smoothing": 2.0}, "--label-smoothing"), ({"label_smoothing": float("nan")}, "--label-smoothing"),
    ({"seed": 2**63}, "--seed"), ({"stop_after": 0}, "--stop-after"),
    ({"options": {"resolution": 0}}, "--resolution"), ({"options": {"vision_layers": 0}}, "--layers"),
    ({"options": {"resolution": 10**6}}, "--resolution"),
])
def test_train_bounds(given, flag):
    from comco.train.run import make_config

    with pytest.raises(UserError, match=flag):
        make_config("scratch", data="d", out="o", **given)


def test_longclip_weight_bounds():
    from comco.train.run import make_config

    with pytest.raises(UserError, match="--short-weight"):
        make_config("longclip", data="d", out="o", options={"short_weight": float("nan")})


def test_cuda_without_a_gpu_is_one_shared_user_error(monkeypatch):
    import torch

    from comco.models import check_device
    from comco.train.loop import resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for check in (check_device, resolve_device):
        with pytest.raises(UserError, match="no CUDA device"):
            check("cuda")
    with pytest.raises(UserError, match="cpu, cuda or cuda:N"):
        check_device("gpu")
    assert check_device("cpu") == "cpu" and resolve_device("auto") == "cpu"


def test_a_cut_metrics_line_does_not_break_resume(tmp_path):
    from comco.train.loop import _truncate_metrics

    path = tmp_path / "metrics.jsonl"
    lines = [json.dumps({"step": s, "loss": 1.0 / s}) for s in range(1, 5)]
    # a crash mid-write leaves half a line; a stray non-object line too
    path.write_bytes(("\n".join(lines) + "\n" + '{"step": 5, "lo').encode() + b"\n[1, 2]\n\xff\xfe\n")
    _truncate_metrics(path, 3)
    assert [json.loads(line)["step"] for line in path.read_text().splitlines()] == [1, 2, 3]
