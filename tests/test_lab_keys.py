"""Typed stage keys (comco.lab.keys): the ids and hashes of the shipped recipe's stages
are those of the first lab runs, so existing run folders stay valid (pure Python)."""

from __future__ import annotations

import json
from pathlib import Path
from unittest import mock

import pytest

import comco.lab.graph as graph
from comco.lab.keys import (
    REPORT,
    StageKey,
    captions_key,
    colour_base_key,
    finetune_key,
    labclip_key,
    prior_key,
    probe_key,
    render_key,
    scratch_key,
)
from comco.lab.recipe import load_recipe

ROOT = Path(__file__).resolve().parent
RECIPE = ROOT.parent / "recipes" / "order-bias.toml"
# [id, hash] of every stage per scale, recorded with the code before the keys were typed
# (with the code digest replaced by "code-<kind>": the test is of the graph, not of the code); the
# report stages' hashes were taken again when the recipe gained [run] executor, slurm and
# render.shard_images, then [run.node] and the small scale's five seeds (the report hashes the whole
# recipe; no other stage changed, the seeds only added stages); the medium scale's training stages
# were taken again when it moved to batch 256 at a fixed logit scale and added p = 0.5 (its renders,
# captions and priors kept their hashes); the small scale's fine-tunes, their probes and the report
# when its fine-tunes went to 300 steps; the medium report when the medium scale went to five seeds
# (issue 39: the seeds only added stages)
RECORDED = json.loads((ROOT / "data" / "lab-stage-keys.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("scale", sorted(RECORDED))
def test_stage_ids_and_hashes_are_those_of_the_first_runs(scale):
    # on a CPU without native bf16 every training is fp32, as in the first runs (issue 39's
    # precision enters a stage's configuration only where it is not)
    with mock.patch.object(graph, "code_digest", lambda kind: f"code-{kind}"), \
            mock.patch("comco.train.precision.cpu_flags", lambda *a: ["avx2"]):
        stages = graph.build_stages(load_recipe(RECIPE, scale))
    assert [[s.id, s.hash] for s in stages] == RECORDED[scale]


def test_each_maker_spells_the_id_of_its_kind():
    model = scratch_key("simco", 1.0, 2)
    assert {render_key("colors-train", "simco").id, captions_key("test", "simco", 0.5).id, model.id,
            colour_base_key("simco", 0).id, finetune_key("simco", "debias", 1).id, labclip_key("simco", 0).id,
            probe_key(model).id, probe_key(finetune_key("simco", "debias", 1)).id, prior_key("simco", 3).id,
            captions_key("train", "simco", 0.0).id, captions_key("colors", "simco", 1.0).id, REPORT.id} == {
        "render-colors-train-simco", "captions-test-simco-p0.5", "scratch-simco-p1-s2", "scratch-colors-simco-s0",
        "finetune-simco-debias-s1", "labclip-simco-s0", "probe-scratch-simco-p1-s2",
        "probe-finetune-simco-debias-s1", "probe-prior-simco-s3", "captions-simco-p0", "captions-colors-simco-p1",
        "report"}
    with pytest.raises(ValueError):
        render_key("nope", "simco")
    with pytest.raises(ValueError):
        StageKey("mystery").id  # noqa: B018


def test_stages_are_found_by_key_and_by_kind_and_fields():
    stages = graph.build_stages(load_recipe(RECIPE, "small"))
    key = probe_key(scratch_key("simco", 0.5, 1))
    assert stages.get(key).id == "probe-scratch-simco-p0.5-s1" and key in stages
    assert stages.get(probe_key(scratch_key("simco", 0.25, 1))) is None  # p = 0.25 is not a small-scale dose
    at_one = stages.find("scratch", role="order", p=1.0)
    assert [s.id for s in at_one] == [f"scratch-simco-p1-s{seed}" for seed in range(5)]
    assert {s.key.seed for s in stages.find("probe", model=None)} == {0, 1, 2, 3, 4}  # the priors
    # a stage's deps are the ids of other stages' keys
    probe = stages.get(probe_key(finetune_key("simco", "debias", 0)))
    assert probe.deps == {"model": "finetune-simco-debias-s0", "test": "render-test-simco",
                          "gate": "captions-test-simco-p1"}


def test_the_seed_offsets_are_named():
    recipe = load_recipe(RECIPE, "small")
    stages = graph.build_stages(recipe)
    seed = recipe.get("data", "seed")
    assert stages.get(render_key("colors-train", "simco")).config["seed"] == seed + graph.COLOUR_BASE_SEED_OFFSET
    assert stages.get(render_key("colors", "simco")).config["seed"] == seed + graph.COLOUR_MAP_SEED_OFFSET
