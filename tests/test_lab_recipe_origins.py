"""Issue 26's origins keys in a recipe (pure Python): the text tower's attention and pooling,
the objective and its gate, checkpoints saved along a scratch run and their probing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from comco.errors import UserError
from comco.lab.graph import build_stages
from comco.lab.recipe import parse_recipe

RECIPE = Path(__file__).resolve().parent.parent / "recipes" / "order-bias.toml"


def with_keys(scratch: str = "", probe: str = "", gates: str = "") -> str:
    text = RECIPE.read_text(encoding="utf-8")
    for section, keys in (("[scratch]\n", scratch), ("[probe]\n", probe), ("[gates]\n", gates)):
        assert section in text
        text = text.replace(section, section + keys, 1)
    return text


def test_left_out_the_keys_change_no_stage():
    stages = build_stages(parse_recipe(with_keys(), "small"))
    scratch = next(s for s in stages if s.kind == "scratch")
    assert not {"text_attention", "text_pool", "objective", "checkpoints", "checkpoint_spacing",
                "logit_scale"} & set(scratch.config)


def test_a_fixed_logit_scale_reaches_every_scratch_trained_model():
    stages = build_stages(parse_recipe(with_keys("logit_scale = 10.0\n"), "small"))
    trained = [s for s in stages if s.kind == "scratch"]
    assert any("colors" in s.id for s in trained) and any("colors" not in s.id for s in trained)
    assert all(s.config["logit_scale"] == 10.0 for s in trained)  # the colour bases train like the others
    assert not any("logit_scale" in s.config for s in stages if s.kind != "scratch")
    from comco.lab.stages import _origins

    assert _origins(trained[0].config)["logit_scale"] == 10.0  # and reaches the training options


def test_the_keys_reach_the_scratch_stages_and_the_priors():
    source = with_keys('text_attention = "bidirectional"\ntext_pool = "first"\ncheckpoints = 8\n'
                       'checkpoint_spacing = "log"\n', "development = true\n")
    stages = build_stages(parse_recipe(source, "small"))
    scratch = next(s for s in stages if s.kind == "scratch" and "colors" not in s.id)
    assert scratch.config["text_attention"] == "bidirectional" and scratch.config["text_pool"] == "first"
    assert scratch.config["checkpoints"] == 8 and scratch.config["checkpoint_spacing"] == "log"
    prior = next(s for s in stages if s.id.startswith("probe-prior-"))
    assert prior.config["prior"]["text_attention"] == "bidirectional"
    probe = next(s for s in stages if s.id == f"probe-{scratch.id}")
    assert probe.config["development"] is True and "development" not in prior.config


def test_a_simcse_recipe_with_its_gate_parses():
    source = with_keys('objective = "simcse"\n', gates="caption_r1 = 0.5\n")
    source = source.replace('stages = ["render", "captions", "scratch", "probe", "finetune", "analyses", "labclip", '
                            '"report"]', 'stages = ["render", "captions", "scratch", "probe", "report"]', 1)
    recipe = parse_recipe(source, "full")
    assert recipe.settings["scratch"]["objective"] == "simcse"
    assert recipe.settings["gates"]["caption_r1"] == 0.5
    probes = [s for s in build_stages(recipe) if s.kind == "probe" and "prior" not in s.config]
    assert probes and all(s.config["text_only"] for s in probes)  # their caption-to-caption gate is measured


@pytest.mark.parametrize("scratch,probe,gates,named", [
    ('text_attention = "sideways"\n', "", "", "scratch.text_attention"),
    ('text_attention = "bidirectional"\n', "", "", "scratch.text_pool"),
    ('text_attention = "bidirectional"\ntext_pool = "max"\n', "", "", "scratch.text_pool"),
    ('text_pool = "mean"\n', "", "", "scratch.text_pool"),
    ('objective = "sbert"\n', "", "", "scratch.objective"),
    ('objective = "simcse"\n', "", "", "gates.caption_r1"),
    ('objective = "simcse"\n', "", "caption_r1 = 0.5\n", "scratch.objective"),  # with fine-tunes to run
    ('objective = "paraphrase"\n', "", "", "gates.caption_r1"),
    ('objective = "paraphrase"\n', "", "caption_r1 = 0.5\n", "scratch.objective"),
    ("checkpoints = -1\n", "", "", "scratch.checkpoints"),
    ("", "development = true\n", "", "probe.development"),
    ("checkpoints = 0\n", "development = true\n", "", "probe.development"),
    ('checkpoints = 8\ncheckpoint_spacing = "linear"\n', "", "", "scratch.checkpoint_spacing"),
    ('checkpoint_spacing = "log"\n', "", "", "scratch.checkpoint_spacing"),
    ("logit_scale = 0.5\n", "", "", "scratch.logit_scale"),
    ("logit_scale = 1000.0\n", "", "", "scratch.logit_scale"),
    ('logit_scale = "hot"\n', "", "", "scratch.logit_scale"),
])
def test_a_bad_origins_key_is_named(scratch, probe, gates, named):
    with pytest.raises(UserError) as err:
        parse_recipe(with_keys(scratch, probe, gates), "small")
    assert named in str(err.value) and "\n" not in str(err.value)


def test_a_bad_origins_key_exits_2_before_the_run_folder_is_claimed(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(with_keys('objective = "simcse"\n'))
    r = subprocess.run([sys.executable, "-m", "comco.cli", "lab", "run", str(bad), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "gates.caption_r1" in lines[0]
    assert not (tmp_path / "o").exists()


def test_the_report_names_a_fixed_temperature_as_a_deviation():
    from comco.lab.report.provenance import temperature

    assert "learned" in temperature({}) and "open_clip" in temperature({})
    fixed = temperature(parse_recipe(RECIPE.read_text(encoding="utf-8"), "medium").settings["scratch"])
    assert "fixed at 10" in fixed and "deviation" in fixed
    assert "learned" in temperature(parse_recipe(RECIPE.read_text(encoding="utf-8"), "small").settings["scratch"])
