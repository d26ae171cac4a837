"""Issue 25 item 9: a render group (a pair group; a plain scene or a single is a group of one)
is the one unit the render loop schedules, retries, settles and journals, whatever order its
workers answer in. A fake pool (tests/support/fake_pool.py) plays, deterministically, the
orders a loaded machine makes by chance; no Blender runs here.

The path that lost a group: an image of a pair group failed its checks while another image of
the group was still in flight; that image's answer, now stale, was dropped before the step
that re-plans a group whose images are all back, and when it was the run's last answer the
loop ended with the group neither rendered nor listed as failed ("3 are unaccounted for")."""

import json
import random
from pathlib import Path

import pytest
from support.fake_pool import FakePool
from typer.testing import CliRunner

import comco.render.run as run
from comco.data.validate import validate_dataset
from comco.errors import UserError
from comco.plan import PlanConfig
from comco.render.options import RenderOptions

PAIRS = {"object_set": "simco", "objects": "2-3", "n": 2, "resolution": "48", "pairs": "remove,count"}
FACTORS = ("base", "remove", "count")


@pytest.fixture(autouse=True)
def fake(monkeypatch):
    monkeypatch.setattr(run, "WorkerPool", FakePool)
    monkeypatch.setattr(run, "check_environment", lambda opts: None)
    monkeypatch.setattr(FakePool, "made", [])


def render(out, script, cfg=PAIRS, *, resume=False, **options):
    FakePool.script = staticmethod(script)
    opts = RenderOptions(preset="draft", **{"workers": 2, "masks": True, **options})
    return run.run_render(PlanConfig.from_dict(cfg), opts, Path(out), resume=resume, quiet=True)


def oldest_first(answers: dict):
    """The oldest image in flight answers next: `answers` maps KEY@RETRY to how (default ok)."""
    def script(pool, flying):
        w = flying[0]
        return w, answers.get(f"{w['job']['key']}@{w['job']['record'].get('retry', 0)}", "ok")
    return script


def lines(out, name):
    path = Path(out) / name
    return [json.loads(x) for x in path.read_text().splitlines()] if path.is_file() else []


def assert_accounted(out, cfg=PAIRS):
    """Every planned image is rendered or listed as failed, and pair groups are whole."""
    assert validate_dataset(Path(out)) == []
    failed = [f["id"] for f in lines(out, "failures.jsonl") if f["key"].startswith("scene:")]
    ids = [r["id"] for r in lines(out, "scenes.jsonl")] + failed
    per_scene = len(cfg.get("pairs", "").split(",")) + 1 if cfg.get("pairs") else 1
    assert len(ids) == len(set(ids)) == cfg["n"] * per_scene


@pytest.mark.parametrize("late", ["ok", "hung", "crashed"])
def test_an_image_still_in_flight_when_its_group_is_re_planned_loses_nothing(tmp_path, late):
    # Two workers: the last group's base fails its checks while its remove variant is still
    # out; that variant's answer (rendered, or its worker hung or crashed) is the run's last.
    out = tmp_path / "d"
    s = render(out, oldest_first({"scene:1@0": "small", "scene:1:remove@0": late}))
    sent = FakePool.made[-1].sent
    assert sent[:5] == ["scene:0@0", "scene:0:remove@0", "scene:0:count@0", "scene:1@0", "scene:1:remove@0"]
    retry = [k for k in sent if k.startswith("scene:1@") and not k.endswith("@0")]
    assert retry, sent  # the group was planned again ...
    answered = [k for k, _ in FakePool.made[-1].answered]
    assert answered.index("scene:1:remove@0") < sent.index(retry[0])  # ... once none of it was out
    assert s["retries"] == 1 and s["failures"] == [] and s["images"] == 6
    recs = lines(out, "scenes.jsonl")
    group = [r for r in recs if r["index"] == 1]
    assert [r["pair"]["factor"] for r in group] == list(FACTORS)
    assert len({(r["retry"], r["seed"]) for r in group}) == 1 and group[0]["retry"] > 0
    assert_accounted(out)


def test_each_group_is_journaled_whole_in_one_write(tmp_path):
    out = tmp_path / "d"
    render(out, oldest_first({"scene:0:count@0": "small"}))
    entries = lines(out, "journal.jsonl")
    # each group's entries lie together, base first; nothing of group 0's failed attempt is there
    assert sorted([e["key"] for e in entries[k:k + 3]] for k in (0, 3)) == [
        ["scene:0", "scene:0:remove", "scene:0:count"], ["scene:1", "scene:1:remove", "scene:1:count"]]
    assert len(entries) == 6 and all(e["record"]["render_retries"] == 1 for e in entries if e["key"][6] == "0")


def _random_script(seed: int):
    rng = random.Random(seed)

    def script(pool, flying):
        how = rng.choices(["ok", "small", "crashed", "hung"], weights=[60, 25, 10, 5])[0]
        return rng.choice(flying), how
    return script


def _check_no_stale_sends(pool):
    """No image was sent while an image of another attempt of its group was still out."""
    out: dict[str, str] = {}  # KEY -> attempt, of the scene images in flight
    for what, sent in pool.log:
        key, attempt = sent.split("@")
        if not key.startswith("scene:"):
            continue
        if what == "answer":
            del out[key]
            continue
        index = key.split(":")[1]
        assert {a for k, a in out.items() if k.split(":")[1] == index} <= {attempt}, (sent, out)
        out[key] = attempt


@pytest.mark.parametrize("pairs", ["remove,count", ""], ids=["pair-groups", "groups-of-one"])
@pytest.mark.parametrize("seed", range(8))
def test_any_order_of_answers_accounts_for_every_image(tmp_path, seed, pairs):
    cfg = {**PAIRS, "n": 5, "pairs": pairs} if pairs else {k: v for k, v in {**PAIRS, "n": 5}.items() if k != "pairs"}
    out = tmp_path / "d"
    s = render(out, _random_script(seed), cfg, workers=3, max_retries=2, singles=True)
    assert_accounted(out, cfg)
    _check_no_stale_sends(FakePool.made[-1])
    assert s["singles"] + sum(1 for f in s["failures"] if f["key"].startswith("single:")) == 18
    if pairs:  # a group is kept whole from one attempt, or each of its images is a failure
        by_index = {}
        for r in lines(out, "scenes.jsonl"):
            by_index.setdefault(r["index"], []).append(r)
        for g in by_index.values():
            assert [r["pair"]["factor"] for r in g] == list(FACTORS) and len({r["retry"] for r in g}) == 1
    transient = [f for f in lines(out, "failures.jsonl") if "twice" in f["reason"]]
    if transient:  # a --resume renders what crashed workers lost, and the groups come out whole
        render(out, oldest_first({}), cfg, workers=3, max_retries=2, singles=True, resume=True)
        assert_accounted(out, cfg)
        assert not [f for f in lines(out, "failures.jsonl") if "twice" in f["reason"]]


def test_a_group_whose_image_crashed_twice_is_failed_whole_and_resumed_whole(tmp_path):
    out = tmp_path / "d"
    s = render(out, oldest_first({"scene:0:remove@0": "crashed"}), workers=1)
    assert s["crashes"] == 2 and s["transient"] == 1  # remove crashed twice; base and count fail with it
    assert sorted(f["id"] for f in s["failures"]) == ["000000", "000000-count", "000000-remove"]
    before = lines(out, "scenes.jsonl")
    render(out, oldest_first({}), resume=True, workers=1)
    assert FakePool.made[-1].sent == ["scene:0@0", "scene:0:remove@0", "scene:0:count@0"]
    assert not (out / "failures.jsonl").exists()
    assert len(lines(out, "scenes.jsonl")) == 6 and lines(out, "scenes.jsonl")[3:] == before
    assert_accounted(out)


# -------------------------------------------------------------- issue 24 item 6: what render says

def test_rerunning_a_finished_render_calls_it_finished_and_names_overwrite(tmp_path):
    out = tmp_path / "d"
    render(out, oldest_first({}))
    with pytest.raises(UserError) as e:
        render(out, oldest_first({}))
    assert "finished (6 images rendered)" in str(e.value) and "--overwrite" in str(e.value)
    assert "--resume" not in str(e.value) and "partly" not in str(e.value)


def test_rerunning_an_interrupted_render_says_partly_and_names_resume(tmp_path):
    out = tmp_path / "d"

    def interrupt(pool, flying):
        if len(pool.answered) == 4:
            raise KeyboardInterrupt
        return flying[0], "ok"
    with pytest.raises(KeyboardInterrupt):
        render(out, interrupt)
    with pytest.raises(UserError) as e:
        render(out, oldest_first({}))
    assert "partly rendered; pass --resume" in str(e.value)


def test_the_re_planned_count_render_prints_is_dataset_jsons(tmp_path, monkeypatch):
    from comco.cli.app import app

    # Planning alone re-plans scene 0 of seed 2 to fit (retry 1); no render check fails.
    out = tmp_path / "d"
    FakePool.script = staticmethod(oldest_first({}))
    r = CliRunner().invoke(app, ["render", "--object-set", "simco", "--objects", "2-3", "--n", "4",
                                 "--seed", "2", "--resolution", "48", "--pairs", "remove,count", "--preset", "draft",
                                 "--out", str(out)])
    assert r.exit_code == 0, r.output
    counts = json.loads((out / "dataset.json").read_text())["counts"]
    assert counts["retried"] > 0
    assert f", {counts['retried']} re-planned, " in r.output
    # and render-check re-plans are counted among them, as dataset.json counts them
    FakePool.script = staticmethod(oldest_first({"scene:1@0": "small"}))
    r = CliRunner().invoke(app, ["render", "--object-set", "simco", "--objects", "2-3", "--n", "4",
                                 "--seed", "2", "--resolution", "48", "--pairs", "remove,count", "--preset", "draft",
                                 "--overwrite", "--out", str(out)])
    counts = json.loads((out / "dataset.json").read_text())["counts"]
    assert f", {counts['retried']} re-planned (3 after failing a render check)" in r.output, r.output
