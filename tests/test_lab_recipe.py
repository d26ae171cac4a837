"""Lab recipes and the stage graph (pure Python: no rendering, no training)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from comco.errors import UserError
from comco.lab.graph import build_stages
from comco.lab.recipe import load_recipe, parse_recipe
from comco.lab.run import prepare_folder

RECIPE = Path(__file__).resolve().parent.parent / "recipes" / "order-bias.toml"


def text() -> str:
    return RECIPE.read_text(encoding="utf-8")


def edit(old: str, new: str, source: str | None = None) -> str:
    source = source or text()
    assert old in source, old
    return source.replace(old, new, 1)


@pytest.mark.parametrize("scale", ["smoke", "small", "full"])
def test_shipped_recipe_loads_at_every_scale(scale):
    r = load_recipe(RECIPE, scale)
    assert r.name == "order-bias" and r.scale == scale
    stages = build_stages(r)
    ids = [s.id for s in stages]
    assert len(ids) == len(set(ids))
    assert ids[-1] == "report"
    kinds = {s.kind for s in stages}
    assert {"render", "captions", "scratch", "probe", "finetune", "labclip", "report"} <= kinds
    # every p gets at least 3 seeds outside the smoke scale
    if scale != "smoke":
        assert len(r.get("scratch", "seeds")) >= 3
        assert {0.0, 0.5, 1.0} <= set(r.get("data", "order_bias"))


def test_a_bare_name_finds_the_shipped_recipe():
    assert load_recipe("order-bias", "smoke").path.endswith("order-bias.toml")


def test_scales_override_key_by_key():
    smoke, full = load_recipe(RECIPE, "smoke"), load_recipe(RECIPE, "full")
    assert smoke.get("scratch", "steps") < full.get("scratch", "steps")
    assert smoke.get("data", "layout") == full.get("data", "layout") == "one-large"  # not overridden


@pytest.mark.parametrize("old,new,named", [
    ("[data]\n", "[data]\ncolour = true\n", "data.colour"),
    ("[render]\n", "[renderer]\n", "renderer"),
    ('stages = ["render", "captions"', 'stages = ["render", "caption"', "caption"),
    ("preset = \"cycles\"", "preset = \"raytrace\"", "render.preset"),
    ("order_bias = [0.0, 0.25, 0.5, 0.75, 1.0]", "order_bias = [0.0, 1.5]", "data.order_bias[1]"),
    ("seeds = [0, 1, 2, 3, 4]\ncaptions", "seeds = [0, 1, 2, 3, 4]\ncaption = [\"and\"]\ncaptions", "scratch.caption"),
    ("[scales.smoke.scratch]\n", "[scales.smoke.scratch]\nsteps_per_epoch = 3\n",
     "scales.smoke.scratch.steps_per_epoch"),
    ("[scales.smoke.data]", "[scales.tiny.data]", "scales.tiny"),
    ("name = \"debias-no-pad\"\nkind = \"debias\"", "name = \"debias-no-pad\"\nkind = \"debiased\"",
     "finetune.variants[4].kind"),
    ("pad = false", "padding = false", "finetune.variants[4].padding"),
    ("steps = 1000\nlr = 2e-3", "steps = 0\nlr = 2e-3", "scales.small.scratch.steps"),
    ("steps = 1000\nlr = 2e-3", "steps = \"many\"\nlr = 2e-3", "scales.small.scratch.steps"),
    ('object_sets = ["simco", "comco"]', 'object_sets = ["simco", "lego"]', "data.object_sets[1]"),
])
def test_a_bad_key_stage_or_value_is_named(old, new, named):
    with pytest.raises(UserError) as err:
        parse_recipe(edit(old, new), "small")
    assert named in str(err.value)
    assert "\n" not in str(err.value)


def test_a_missing_key_is_named():
    with pytest.raises(UserError, match="'probe.bootstrap' is missing"):
        parse_recipe(edit("bootstrap = 1000\n", ""), "full")


def test_a_stage_without_its_input_stage_is_refused():
    with pytest.raises(UserError, match="'scratch' needs stage 'captions'"):
        parse_recipe(edit('stages = ["render", "captions", ', 'stages = ["render", '), "full")


def test_unknown_scale_is_refused():
    with pytest.raises(UserError, match="--scale"):
        parse_recipe(text(), "huge")


def test_bad_recipe_exits_2_with_one_line(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(edit("[probe]\n", "[probe]\nbootstraps = 5\n"))
    r = subprocess.run([sys.executable, "-m", "comco.cli", "lab", "run", str(bad), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "probe.bootstraps" in lines[0]
    assert not (tmp_path / "o").exists()


def _hashes(source: str, scale: str = "small") -> dict[str, str]:
    return {s.id: s.hash for s in build_stages(parse_recipe(source, scale))}


def _downstream(stages, roots: set[str]) -> set[str]:
    out = set(roots)
    changed = True
    while changed:
        changed = False
        for s in stages:
            if s.id not in out and any(d in out for d in s.deps.values()):
                out.add(s.id)
                changed = True
    return out


def test_changing_one_training_setting_changes_only_training_and_what_follows():
    base = _hashes(text())
    changed = _hashes(edit("steps = 1000\nlr = 2e-3", "steps = 1500\nlr = 3e-4"))
    stages = build_stages(parse_recipe(text(), "small"))
    scratch = {s.id for s in stages if s.kind == "scratch"}
    differ = {k for k in base if base[k] != changed[k]}
    assert differ == _downstream(stages, scratch)
    assert not any(k.startswith(("render-", "captions-")) for k in differ)
    assert any(k.startswith("finetune-") for k in differ) and "report" in differ


def test_changing_one_finetune_variant_leaves_the_scratch_models():
    # the full scale runs every variant (the CPU scales only longclip and debias)
    base = _hashes(text(), "full")
    changed = _hashes(edit("name = \"debias-equal\"\nkind = \"debias\"\nshort_weight = 0.5",
                           "name = \"debias-equal\"\nkind = \"debias\"\nshort_weight = 0.4"), "full")
    differ = {k for k in base if base[k] != changed[k]}
    seeds = range(5)
    assert differ == {f"{kind}-{oset}-debias-equal-s{seed}" for kind in ("finetune", "probe-finetune")
                      for oset in ("simco", "comco") for seed in seeds} | {"report"}


def test_images_do_not_depend_on_the_order_bias():
    """One render per object set serves every p: p reaches only the caption stages."""
    stages = build_stages(load_recipe(RECIPE, "small"))
    renders = [s for s in stages if s.kind == "render"]
    assert all("order_bias" not in s.config for s in renders)
    captions = [s for s in stages if s.kind == "captions"]
    by_render: dict = {}
    for s in captions:
        by_render.setdefault(s.deps["data"], []).append(s.config["order_bias"])
    ps = load_recipe(RECIPE, "small").get("data", "order_bias")
    assert len(ps) >= 3
    # the training images and the held-out test images: one caption variant per p each;
    # the LABCLIP base's colour images: one, at labclip.order_bias
    assert by_render == {"render-train-simco": ps, "render-test-simco": ps, "render-colors-train-simco": [1.0]}


def test_planner_order_bias_changes_only_orders_and_captions():
    from comco.manifest import load_object_set
    from comco.plan import PlanConfig, Planner

    simco = load_object_set("simco")
    plans = {p: Planner(PlanConfig(object_set="simco", objects=(1, 2, 3, 4), n=40, order_bias=p), simco)
             for p in (0.0, 0.5, 1.0)}
    moved = 0
    for i in range(40):
        recs = {p: pl.plan(i) for p, pl in plans.items()}
        strip = [{k: v for k, v in r.items() if k not in ("mention_orders", "captions")} for r in recs.values()]
        assert strip[0] == strip[1] == strip[2]
        moved += recs[0.0]["mention_orders"] != recs[1.0]["mention_orders"]
    assert moved > 10  # p did change the orders


def test_a_folder_of_another_recipe_is_refused(tmp_path):
    r = load_recipe(RECIPE, "smoke")
    other = parse_recipe(re.sub(r'^name = ".*"$', 'name = "other"', text(), count=1, flags=re.M), "smoke")
    prepare_folder(tmp_path, r, resume=False, overwrite=False)
    assert json.loads((tmp_path / "lab.json").read_text())["recipe"] == "order-bias"
    with pytest.raises(UserError, match="--resume"):
        prepare_folder(tmp_path, other, resume=False, overwrite=False)
    with pytest.raises(UserError, match="scale"):
        prepare_folder(tmp_path, load_recipe(RECIPE, "small"), resume=False, overwrite=False)
    (tmp_path / "stages").mkdir()
    assert prepare_folder(tmp_path, other, resume=True, overwrite=False) == "resume"
    assert (tmp_path / "stages").is_dir()  # --resume keeps what is there
    assert prepare_folder(tmp_path, r, resume=False, overwrite=True) == "overwrite"
    assert not (tmp_path / "stages").exists()


def test_a_non_empty_folder_without_a_lab_run_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="not empty"):
        prepare_folder(tmp_path, load_recipe(RECIPE, "smoke"), resume=False, overwrite=False)
    assert (tmp_path / "notes.txt").read_text() == "mine"
