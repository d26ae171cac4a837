"""[[scratch.variants]] and recipes/origins.toml (issue 26): each variant trained at every p
and seed beside the recipe's own scratch models, its stages keyed by its name, a prior per
distinct text tower; bad variants refused before the run folder is claimed. The end-to-end
smoke run of the recipe, report included, is marked slow."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest

import comco.lab.graph as graph
from comco.errors import UserError
from comco.lab.keys import prior_key, probe_key, scratch_key
from comco.lab.recipe import load_recipe, parse_recipe
from comco.lab.report.development import half_rise_step

ROOT = Path(__file__).resolve().parent.parent
ORIGINS = ROOT / "recipes" / "origins.toml"
ORDER_BIAS = ROOT / "recipes" / "order-bias.toml"
BIDIRECTIONAL = '[[scratch.variants]]\nname = "bidirectional"\ntext_attention = "bidirectional"\ntext_pool = "mean"\n'
SIMCSE = '[[scratch.variants]]\nname = "simcse"\nobjective = "simcse"\n'


def with_variants(variants: str, gates: str = "") -> str:
    """order-bias.toml with [[scratch.variants]] tables after its [scratch] section."""
    text = ORDER_BIAS.read_text(encoding="utf-8")
    text = text.replace("\n[finetune]\n", f"\n{variants}\n[finetune]\n", 1)
    return text.replace("[gates]\n", "[gates]\n" + gates, 1)


def hashes(source: str, scale: str = "small") -> dict[str, str]:
    with mock.patch.object(graph, "code_digest", lambda kind: f"code-{kind}"):
        return {s.id: s.hash for s in graph.build_stages(parse_recipe(source, scale))}


def test_each_variant_is_trained_at_every_p_and_seed_beside_the_baseline():
    stages = graph.build_stages(load_recipe(ORIGINS, "small"))
    scratch = {s.id for s in stages if s.kind == "scratch"}
    assert scratch == {f"scratch-simco-{v}p{p}-s{s}" for v in ("", "bidirectional-", "simcse-", "paraphrase-")
                       for p in (0, 1) for s in (0, 1, 2)}
    # the same captions for every variant at one p
    for v in (None, "bidirectional", "simcse"):
        assert stages.get(scratch_key("simco", 1.0, 2, v)).deps == {"data": "captions-simco-p1"}
    bi = stages.get(scratch_key("simco", 0.0, 0, "bidirectional")).config
    assert (bi["text_attention"], bi["text_pool"], bi["checkpoints"], bi["checkpoint_spacing"]) == (
        "bidirectional", "mean", 12, "log")
    assert stages.get(scratch_key("simco", 0.0, 0, "simcse")).config["objective"] == "simcse"
    assert stages.get(scratch_key("simco", 0.0, 0, "paraphrase")).config["objective"] == "paraphrase"
    assert stages.get(probe_key(scratch_key("simco", 1.0, 0, "paraphrase"))).config["text_only"]
    assert "objective" not in stages.get(scratch_key("simco", 0.0, 0)).config  # the baseline keeps its config
    simcse_probe = stages.get(probe_key(scratch_key("simco", 1.0, 0, "simcse"))).config
    assert simcse_probe["text_only"] and simcse_probe["development"]
    assert "text_only" not in stages.get(probe_key(scratch_key("simco", 1.0, 0, "bidirectional"))).config


def test_a_prior_for_each_distinct_text_tower():
    stages = graph.build_stages(load_recipe(ORIGINS, "small"))
    priors = sorted(s.id for s in stages.find("probe", model=None))
    assert priors == sorted([f"probe-prior-simco-s{s}" for s in range(3)]
                            + [f"probe-prior-simco-bidirectional-s{s}" for s in range(3)])
    assert stages.get(prior_key("simco", 1, "bidirectional")).config["prior"]["text_attention"] == "bidirectional"
    assert stages.get(prior_key("simco", 1, "simcse")) is None  # SimCSE trains the baseline's tower


def test_variants_add_stages_and_change_no_other_hash():
    before = hashes(ORDER_BIAS.read_text(encoding="utf-8"))
    after = hashes(with_variants(BIDIRECTIONAL + SIMCSE, "caption_r1 = 0.8\n"))
    kept = {k: v for k, v in after.items() if k in before and k != "report"}
    assert kept == {k: v for k, v in before.items() if k != "report"}
    added = set(after) - set(before)
    assert "scratch-simco-simcse-p0.5-s1" in added and "probe-prior-simco-bidirectional-s0" in added
    # the fine-tunes still start from the baseline's models, and only they get the DeBias analyses
    finetunes = graph.build_stages(parse_recipe(with_variants(SIMCSE, "caption_r1 = 0.8\n"), "small"))
    assert {s.deps["model"] for s in finetunes if s.kind == "finetune"} == {f"scratch-simco-p1-s{i}" for i in range(5)}
    assert not finetunes.get(probe_key(scratch_key("simco", 1.0, 0, "simcse"))).config["analyses"]
    # a changed variant changes its own stages only
    other = hashes(with_variants(BIDIRECTIONAL.replace('"mean"', '"first"') + SIMCSE, "caption_r1 = 0.8\n"))
    changed = {k for k in after if after[k] != other.get(k)}
    assert changed - {"report"} and all("bidirectional" in k for k in changed - {"report"})


@pytest.mark.parametrize("variants,gates,named", [
    ('[[scratch.variants]]\nname = "../up"\nobjective = "simcse"\n', "caption_r1 = 0.8\n", "scratch.variants[0].name"),
    ('[[scratch.variants]]\nname = "a/b"\nobjective = "simcse"\n', "caption_r1 = 0.8\n", "scratch.variants[0].name"),
    ('[[scratch.variants]]\nname = ".hidden"\nobjective = "simcse"\n', "caption_r1 = 0.8\n",
     "scratch.variants[0].name"),
    (SIMCSE + SIMCSE, "caption_r1 = 0.8\n", "scratch.variants[1].name"),
    ('[[scratch.variants]]\nname = "x"\nlr = 0.1\n', "", "scratch.variants[0].lr"),
    ('[[scratch.variants]]\nobjective = "simcse"\n', "caption_r1 = 0.8\n", "scratch.variants[0].name"),
    ('[[scratch.variants]]\nname = "x"\n', "", "scratch.variants[0]"),
    ('[[scratch.variants]]\nname = "x"\ntext_attention = "sideways"\n', "", "scratch.variants[0].text_attention"),
    ('[[scratch.variants]]\nname = "x"\ntext_attention = "bidirectional"\n', "", "scratch.variants[0].text_pool"),
    ('[[scratch.variants]]\nname = "x"\ntext_pool = "mean"\n', "", "scratch.variants[0].text_pool"),
    ('[[scratch.variants]]\nname = "x"\nobjective = "sbert"\n', "", "scratch.variants[0].objective"),
    (SIMCSE, "", "gates.caption_r1"),
    ("[scratch.variants]\n", "", "scratch.variants"),
])
def test_a_bad_variant_is_named(variants, gates, named):
    with pytest.raises(UserError) as err:
        parse_recipe(with_variants(variants, gates), "small")
    assert f"'{named}" in str(err.value) and "\n" not in str(err.value)


def test_a_bad_variant_exits_2_before_the_run_folder_is_claimed(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(with_variants(SIMCSE + SIMCSE, "caption_r1 = 0.8\n"))
    r = subprocess.run([sys.executable, "-m", "comco.cli", "lab", "run", str(bad), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "scratch.variants[1].name" in lines[0]
    assert not (tmp_path / "o").exists()


def test_the_origins_recipe_is_shipped_and_parses_at_each_of_its_scales():
    for scale in ("smoke", "small"):
        recipe = load_recipe("origins", scale)
        assert [v["name"] for v in recipe.settings["scratch"]["variants"]] == ["bidirectional", "simcse", "paraphrase"]
        assert recipe.settings["scratch"]["checkpoints"] >= 2 and recipe.settings["probe"]["development"]
    small = load_recipe("origins", "small").settings
    assert small["data"]["order_bias"] == [0.0, 1.0] and small["scratch"]["seeds"] == [0, 1, 2]
    assert small["scratch"]["checkpoints"] >= 8 and small["render"]["resolution"] == 64
    assert small["scratch"]["checkpoint_spacing"] == "log"  # dense early, where the biases rise


def test_the_full_origins_scale_adds_seeds_to_the_small_runs_own_stages():
    small = {s.id: s.hash for s in graph.build_stages(load_recipe("origins", "small"))}
    full = {s.id: s.hash for s in graph.build_stages(load_recipe("origins", "full"))}
    assert load_recipe("origins", "full").settings["scratch"]["seeds"] == [0, 1, 2, 3, 4]
    assert {k: v for k, v in small.items() if k != "report"} == {k: full[k] for k in small if k != "report"}
    added = set(full) - set(small)
    assert scratch_key("simco", 1.0, 4, "paraphrase").id in added and len(added) == 2 * 4 * 2 * 2 + 2 * 2


def test_the_half_rise_step_is_the_first_snapshot_past_half_the_change():
    pts = [{"step": 0, "f": 0.2}, {"step": 10, "f": 0.25}, {"step": 20, "f": 0.41}, {"step": 30, "f": 0.6}]
    assert half_rise_step(pts, "f") == 20  # half of 0.4 is reached at 0.41
    assert half_rise_step([{"step": 0, "f": 0.5}, {"step": 10, "f": 0.4}], "f") is None  # falls: no rise
    assert half_rise_step([{"step": 0, "f": float("nan")}, {"step": 10, "f": 0.4}], "f") is None  # no untrained point


@pytest.mark.slow
def test_the_smoke_run_reports_the_variants_and_the_development(tmp_path):
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "comco.cli", "lab", "run", str(ORIGINS), "--scale", "smoke",
                        "--out", str(out), "--quiet"], capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stderr[-2000:]
    report = (out / "report.md").read_text(encoding="utf-8")
    for needle in ("The origins: the text tower and the objective", "Bias development along training",
                   "SimCSE (ComCO paper", "caption R@1", "bidirectional p = 1, seed 1",
                   "does the untrained text tower still favour the first mention",
                   "does the bias not need the images", "does the text side's first-mention share move"):
        assert needle in report, needle
    for name in ("simco-origins.png", "simco-development-p0.png", "simco-development-p1.png"):
        assert (out / "figures" / name).is_file()
    numbers = json.loads((out / "results.json").read_text(encoding="utf-8"))["object_sets"]["simco"]
    assert numbers["origins"]["questions"] and numbers["development"]["questions"]
    dev = numbers["development"]["figures"]["1"]
    assert all(series["set R@1"]["steps"][0] == 0 for series in dev.values())  # the untrained point first


def _development_context(seeds=(0, 1, 2)):
    from comco.lab.report.context import SetContext
    from comco.report import Doc

    s = {"data": {"order_bias": [0.0, 1.0]}, "scratch": {"seeds": list(seeds), "variants": []},
         "gates": {"min_passing": 2}}
    return SetContext(doc=Doc(), run=None, fig=Path("."), oset="simco", s=s)


def _curve(tor: list[float], ior: list[float], steps=(0, 10, 20, 40)) -> list[dict]:
    return [{"step": st, "TOR first of hits, 3 objects": t, "IOR largest of hits, 3 objects": i}
            for st, t, i in zip(steps, tor, ior)]


def test_the_development_questions_date_the_rises_and_say_why_they_cannot():
    from comco.lab.report.development import _questions

    flat = [0.33, 0.33, 0.33, 0.33]
    late, early = [0.33, 0.35, 0.40, 0.80], [0.33, 0.60, 0.70, 0.80]  # half-rise at step 40 / step 10
    # IOR rises at step 10 in every seed, TOR at step 40, 20 and 40: dated, +23.3 steps, and the
    # interval is in steps (t-interval of 30, 10, 30), not clipped to a share's [-1, 1]
    c = _development_context()
    middle = [0.33, 0.35, 0.70, 0.80]  # half-rise at step 20
    data = {(None, 1.0): {0: _curve(late, early), 1: _curve(middle, early), 2: _curve(late, early)},
            (None, 0.0): {s: _curve(flat, early) for s in (0, 1, 2)}}
    out = _questions(c, data, 3)
    dated = out["IOR rises before TOR"]["estimate"]
    half = 4.302653 * (400 / 3) ** 0.5 / 3 ** 0.5  # t(2) x sd / sqrt(3)
    assert dated["mean"] == pytest.approx(70 / 3)
    assert dated["lo"] == pytest.approx(70 / 3 - half, abs=0.01)
    assert dated["hi"] == pytest.approx(70 / 3 + half, abs=0.01)
    assert out["baseline: TOR moves at p = 0"]["estimate"]["mean"] == pytest.approx(0.0)
    # TOR never rises at p = 1 in two seeds: no step for them, and the reason says so
    c = _development_context()
    data[None, 1.0] = {0: _curve(late, early), 1: _curve(flat, early), 2: _curve([0.4, 0.35, 0.3, 0.3], early)}
    out = _questions(c, data, 3)
    assert out["IOR rises before TOR"]["verdict"] == "cannot answer"
    reason = next(f for f in c.findings if "appear before" in f.question).judgement.reason
    assert "1 of 3 gated seed(s) have a half-rise step" in reason
