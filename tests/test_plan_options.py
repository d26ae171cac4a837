"""Issue 23 item 1: each planning option is declared once (comco/plan/options.py) and PlanConfig,
the plan/render options, dataset.json, the hash, the recipe keys and the checks come from it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import fields
from pathlib import Path

import pytest

from comco.data import config_hash
from comco.errors import UserError
from comco.plan import PlanConfig, check_config, plan_options

ROOT = Path(__file__).resolve().parents[1]

# config_hash(PlanConfig.from_dict(d).to_dict(), "abc123"), taken on main (e0ba5bc) before the
# declarations: they must never move, or every existing dataset would stop resuming and validating.
TEMPLATE = '[with]\nobject = "{a} {name}"\njoin = " with "\ncaption = "{objects} on the floor"\n'
PINNED = [
    ({}, "208866e3bea19296"),
    ({"object_set": "simco", "objects": "2-4", "n": 100, "colors": True, "order_bias": 0.7, "seed": 3,
      "layout": "graded"}, "d86913d859592b66"),
    ({"pairs": "remove,swap-size", "large_slot": "M,UL", "resolution": "640x480", "small_fraction": "0.004-0.02",
      "captions": "and,long", "orders": 2, "order_policy": "size-desc"}, "2c58a175c5b151ff"),
    ({"layout": "equal", "equal_fraction": 0.03, "large_fraction": 0.1, "n": 5, "objects": [2, 4]},
     "91c078c042a45220"),
    ({"templates": "/x/t.toml", "templates_text": TEMPLATE, "captions": "with"}, "7d22e50330521405"),
]


@pytest.mark.parametrize("given, digest", PINNED)
def test_the_hash_of_existing_configurations_is_unchanged(given, digest):
    assert config_hash(PlanConfig.from_dict(given).to_dict(), "abc123") == digest


def test_the_hash_with_render_options_is_unchanged():
    config = {**PlanConfig().to_dict(), "render": {"preset": "draft", "samples": None}}
    assert config_hash(config, "abc123") == "555c0552fcb096a8"
    direct = PlanConfig(object_set="simco", objects=(3,), n=7, seed=2**63 - 1, colors=True, pairs=("swap-colors",))
    assert config_hash(direct.to_dict(), "abc123") == "e427cc8448975998"


def test_plan_config_has_one_field_per_declaration_in_their_order():
    assert [f.name for f in fields(PlanConfig)] == [o.name for o in plan_options()]
    assert {f.name: f.default for f in fields(PlanConfig)} == {o.name: o.default for o in plan_options()}


@pytest.mark.parametrize("option", [o for o in plan_options() if o.on_cli], ids=lambda o: o.name)
def test_the_command_line_default_reads_as_the_stored_default(option):
    _, cli_default = option.cli()
    assert PlanConfig.from_dict({option.name: cli_default}) == PlanConfig()


@pytest.mark.parametrize("name, bad, words", [
    ("layout", "grid", "--layout grid: use one of one-large"),
    ("order_policy", "alphabetical", "--order-policy alphabetical: use one of random"),
    ("order_bias", 1.5, "--order-bias 1.5: a probability in 0..1"),
    ("order_bias", "high", "--order-bias 'high': expected a number"),
    ("orders", 0, "--orders 0: at least 1"),
    ("large_fraction", 1.0, "--large-fraction 1.0: an image share in (0, 1)"),
    ("equal_fraction", 0.0, "equal_fraction 0.0: an image share in (0, 1)"),
    ("n", 0, "at least one image"),
    ("colors", 1, "--colors 1: expected true or false"),
    ("large_slot", ("M", "XX"), "--large-slot M,XX"),
])
def test_each_declaration_checks_its_option(name, bad, words):
    from comco.manifest import load_object_set

    with pytest.raises(UserError, match=words.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        check_config(PlanConfig(object_set="simco", **{name: bad}), load_object_set("simco"))


def test_dataset_json_holds_every_option_but_unset_when_set_ones(tmp_path):
    from comco.plan import WHEN_SET

    r = subprocess.run([sys.executable, "-m", "comco.cli", "plan", "--n", "2", "--quiet", "--out", tmp_path / "d"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    config = json.loads((tmp_path / "d" / "dataset.json").read_text())["config"]
    assert set(config) == {o.name for o in plan_options() if o.in_hash != WHEN_SET}


# ---------------------------------------------------------------- a throw-away option

# comco with one more declaration, added in one place (the declaration list) before anything is built
PATCHED = textwrap.dedent('''
    import json, sys
    from comco.plan import options as declared

    declared.OPTIONS = (*declared.OPTIONS, declared.PlanOption(
        "glow", float, 0.0, bounds=declared.Range(0.0, 1.0), in_hash=declared.WHEN_SET, recipe="data.glow",
        help="Throw-away glow of every object (a test's option)."))

    if sys.argv[1] == "recipe":
        from comco.errors import UserError
        from comco.lab import build_stages, parse_recipe
        text = open(sys.argv[2], encoding="utf-8").read()
        out = {}
        for value in ("0.25", "2.0", None):
            source = text if value is None else text.replace("[data]\\n", f"[data]\\nglow = {value}\\n", 1)
            try:
                stages = build_stages(parse_recipe(source, "smoke"))
                out[str(value)] = sorted({json.dumps(s.config.get("glow")) for s in stages if s.kind == "render"})
            except UserError as exc:
                out[str(value)] = str(exc)
        print(json.dumps(out))
    else:
        from comco.cli.app import main
        sys.argv = ["comco", *sys.argv[1:]]
        main()
''')


@pytest.fixture(scope="module")
def patched(tmp_path_factory):
    script = tmp_path_factory.mktemp("glow") / "comco_with_glow.py"
    script.write_text(PATCHED)

    def run(*args):
        return subprocess.run([sys.executable, str(script), *map(str, args)], capture_output=True, text=True,
                              env={**os.environ, "COLUMNS": "200"})
    return run


@pytest.mark.parametrize("verb", ["plan", "render"])
def test_a_declared_option_is_in_the_help_of_plan_and_render(patched, verb):
    r = patched(verb, "--help")
    assert r.returncode == 0, r.stderr
    assert "--glow" in r.stdout and "Throw-away glow" in r.stdout


def test_a_declared_option_reaches_dataset_json_and_the_hash(patched, tmp_path):
    plain, glowing, before = tmp_path / "plain", tmp_path / "glowing", tmp_path / "before"
    for args in (["--out", plain], ["--glow", "0.5", "--out", glowing]):
        r = patched("plan", "--n", "3", "--seed", "4", "--quiet", *args)
        assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-m", "comco.cli", "plan", "--n", "3", "--seed", "4", "--quiet",
                        "--out", before], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    info = {p.name: json.loads((p / "dataset.json").read_text()) for p in (plain, glowing, before)}
    assert info["glowing"]["config"]["glow"] == 0.5
    assert info["glowing"]["config_hash"] != info["plain"]["config_hash"]
    # at its default a WHEN_SET option is left out: comco without the option made the same dataset
    assert "glow" not in info["plain"]["config"]
    assert info["plain"]["config_hash"] == info["before"]["config_hash"]
    assert patched("validate", glowing).returncode == 0


def test_a_declared_option_is_checked_on_the_command_line(patched, tmp_path):
    r = patched("plan", "--n", "3", "--glow", "1.5", "--quiet", "--out", tmp_path / "d")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == ["comco: error: --glow 1.5: use 0..1"]
    assert not (tmp_path / "d").exists()


def test_a_declared_option_is_a_recipe_key(patched):
    r = patched("recipe", ROOT / "recipes" / "order-bias.toml")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["0.25"] == ["0.25"]  # every render stage plans with the recipe's value
    assert out["2.0"] == "recipe key 'data.glow' = 2.0: use 0..1"
    assert out["None"] == ["null"]  # a WHEN_SET option's key may be left out: its default
