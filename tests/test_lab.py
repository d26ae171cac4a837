"""`comco lab run` end to end at the smoke scale: renders, trainings, probes, report.

One smoke run (about 40 s on 2 cores) is shared by the module; later tests run again
into the same folder and check what ran.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.bpy, pytest.mark.torch]

RECIPE = Path(__file__).resolve().parent.parent / "recipes" / "order-bias.toml"
SECTIONS = ["## Findings", "### Sample of the rendered training images", "### Competence gates",
            "### TOR: which mention position",
            "### IOR: which object the image encoder retrieves", "### Text sensitivity",
            "### Before and after Long-CLIP and DeBias fine-tuning", "### DeBias analyses",
            "### LABCLIP: attribute binding", "## What was run"]


def lab(out: Path, recipe: Path = RECIPE, scale: str = "smoke", expect: int = 0) -> dict:
    """`comco lab run` in its own process (as a user runs it); the run's line of runs.jsonl."""
    r = subprocess.run([sys.executable, "-m", "comco.cli", "lab", "run", str(recipe), "--out", str(out),
                        "--scale", scale, "--quiet"], capture_output=True, text=True, timeout=600)
    assert r.returncode == expect, r.stderr[-3000:]
    if expect:
        return {"stderr": r.stderr}
    runs = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines() if line.strip()]
    return runs[-1]


def stage_ids(out: Path) -> set[str]:
    return {p.parent.name for p in (out / "stages").glob("*/stage.json")}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    pytest.importorskip("bpy")
    pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("lab") / "smoke"
    result = lab(out)
    result["stages"] = sorted(stage_ids(out))
    return out, result


def numbers(out: Path) -> dict:
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def test_smoke_runs_every_stage_and_writes_the_report(run_dir):
    out, result = run_dir
    assert result["skipped"] == 0 and set(result["ran"]) == set(result["stages"]) and len(result["ran"]) == 44
    md = (out / "report.md").read_text(encoding="utf-8")
    positions = [md.find(s) for s in SECTIONS]
    assert all(p >= 0 for p in positions), [s for s, p in zip(SECTIONS, positions) if p < 0]
    assert positions == sorted(positions)
    # every image the Markdown links exists, and the HTML carries them inline
    links = [line.split("(")[1].rstrip(")") for line in md.splitlines() if line.startswith("![")]
    assert len(links) >= 8 and all((out / link).is_file() for link in links)
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.count("src='data:image/png;base64,") == len(links)
    assert "<table>" in page and "figures/" not in page
    # what was run: recipe, seeds, versions, dataset hashes, wall time per stage
    for needle in ("Recipe `order-bias` at scale `smoke`", "Training seeds: 0, 1", "torch ", "bpy ",
                   "config_hash", "scenes sha256", "| scratch-simco-p1-s1 | scratch |"):
        assert needle in md, needle
    # published figures appear only as labelled reference rows
    for line in md.splitlines():
        if line.startswith("|") and ("CLIP LAION" in line or "DeBias-CLIP paper" in line):
            assert "published" in line
    # one paragraph per result written from the numbers, comparing intervals
    # (or saying that its models' figures came from too few trials: IOR from 12 images per count)
    assert md.count("A line fitted through all") + md.count("too few to read; it cannot test") >= 6
    assert "Paired by seed against the base model" in md
    # LABCLIP says whether binding is restored, against the published figure
    assert ("Binding is restored" in md or "Binding is not restored" in md) and "LABCLIP reports 95 %" in md
    res = numbers(out)["object_sets"]["simco"]
    assert set(res) == {"gates", "dose_response", "finetune", "labclip"}
    # the first results table: every probed model's gates (the smoke gates are 0: all trained models pass)
    gates = res["gates"]["models"]
    assert len(gates) == 2 * 2 + 5 * 2 + 2 and all(g["passed"] for g in gates.values() if g["trained"])
    assert {g["trained"] for k, g in gates.items() if "prior" in k} == {False}
    assert md.count("*architecture prior* (untrained)") >= 6  # beside the trained models in every table
    assert {"tor_3", "tor_4", "ior_3", "ior_4", "sensitivity_3", "sensitivity_4"} <= set(res["dose_response"])


def test_the_report_opens_with_its_findings_and_says_where_the_numbers_were_made(run_dir):
    out, _ = run_dir
    md = (out / "report.md").read_text(encoding="utf-8")
    page = (out / "report.html").read_text(encoding="utf-8")
    findings = md[md.index("## Findings"):md.index("## Object set")]
    assert "![the two biases against p](figures/simco-findings.png)" in findings
    rows = [line for line in findings.splitlines() if line.startswith("| ") and line[2].isdigit()]
    results = numbers(out)
    assert len(rows) == len(results["findings"]) >= 10  # slopes, priors, claims, LABCLIP
    verdicts = {"supported", "contradicted", "cannot answer", "fragile"}
    for row, f in zip(rows, results["findings"]):
        assert f["verdict"] in verdicts and f["question"] in row
        assert f"(#{f['section']})" in row and f"id='{f['section']}'" in page  # each links to its section
        assert f["leave_one_seed_out_checked"] == (f["direction"] in ("up", "down"))
    assert "<a href='#" in page
    # where the numbers were made: every training and probe stage recorded its machine
    made = results["where_made"]
    assert "bit-identical" in made["reproducible"] and "across machines is the verdicts" in made["reproducible"]
    assert "what carries across machines is the verdicts" in md
    recorded = [m for m in made["machines"] if m.get("recorded") is not False]
    # what tells two runs apart (issue 39): CPU flags, torch build, thread counts, precision
    assert all(m["cpu_flags"] and m["torch_build"]["sha"] and m["precision"] in ("fp32", "bf16") for m in recorded)
    assert "precision fp32" in md and "torch build" in md
    # 6 trainings from scratch (4 order-bias, 2 colour bases), 10 fine-tunes, 2 LABCLIP maps, 16 probes
    assert recorded and sum(m["stages"] for m in recorded) == 34
    import torch

    assert {m["cpu_capability"] for m in recorded} == {torch.backends.cpu.get_cpu_capability()}
    assert {m["torch"] for m in recorded} == {torch.__version__} and f"torch {torch.__version__}" in md


def test_every_order_bias_trains_on_the_same_images(run_dir):
    out, _ = run_dir
    stages = out / "stages"
    variants = {p: stages / f"captions-simco-p{p}" / "data" for p in ("0", "1")}
    assert all((v / "images").resolve() == (stages / "render-train-simco" / "data" / "images").resolve()
               for v in variants.values())
    recs = {p: [json.loads(line) for line in (v / "scenes.jsonl").read_text().splitlines()]
            for p, v in variants.items()}
    same = lambda r: {k: v for k, v in r.items() if k not in ("mention_orders", "captions")}  # noqa: E731
    assert [same(r) for r in recs["0"]] == [same(r) for r in recs["1"]]
    summary = json.loads((stages / "captions-simco-p1" / "stage.json").read_text())["summary"]
    assert summary["largest_first_share"] == 1.0
    first = json.loads((stages / "captions-simco-p0" / "stage.json").read_text())["summary"]
    assert first["largest_first_share"] < 0.6


def test_a_second_run_does_no_work(run_dir):
    out, _ = run_dir
    mtimes = {p: p.stat().st_mtime_ns for p in out.rglob("stage.json")}
    report = (out / "report.md").stat().st_mtime_ns
    again = lab(out)
    assert again["ran"] == [] and again["skipped"] == 44
    assert {p: p.stat().st_mtime_ns for p in out.rglob("stage.json")} == mtimes
    assert (out / "report.md").stat().st_mtime_ns == report


def test_an_unfinished_stage_is_redone_alone(run_dir):
    """A crash leaves a stage without stage.json; the next run redoes only that stage."""
    out, _ = run_dir
    victim = out / "stages" / "scratch-simco-p0-s1"
    before = (victim / "model.pt").read_bytes()
    (victim / "stage.json").unlink()
    (victim / "model.pt").unlink()
    again = lab(out)
    assert again["ran"] == ["scratch-simco-p0-s1"]
    assert (victim / "model.pt").read_bytes() == before  # same seed, same weights


@pytest.mark.slow  # two more smoke runs (about 2 min); tests/test_lab_keys.py checks which hashes a setting moves
def test_changing_one_training_setting_reruns_training_and_what_follows_and_the_seed_fixes_the_numbers(
        run_dir, tmp_path):
    out, first = run_dir
    original = numbers(out)
    source = RECIPE.read_text(encoding="utf-8")
    changed_source = source.replace("[scales.smoke.scratch]\n", "[scales.smoke.scratch]\nlr = 2e-3\n", 1)
    assert changed_source != source
    changed_recipe = tmp_path / "order-bias.toml"
    changed_recipe.write_text(changed_source, encoding="utf-8")
    changed = lab(out, changed_recipe)
    # the untrained priors do not depend on training settings
    expected = {s for s in first["stages"] if not s.startswith(("render-", "captions-", "probe-prior-"))}
    assert set(changed["ran"]) == expected
    assert numbers(out) != original
    # back to the recipe's setting: the same stages run again and give the same numbers
    back = lab(out)
    assert set(back["ran"]) == expected
    assert numbers(out) == original


def test_models_below_the_gates_count_nowhere(run_dir, tmp_path):
    """Raising one gate re-renders only the report: the failing models are listed and marked,
    every fit and comparison leaves them out, and the paragraphs say the scale cannot answer."""
    out, _ = run_dir
    source = RECIPE.read_text(encoding="utf-8")
    strict = tmp_path / "order-bias.toml"
    # swap matching (the scratch models' gate) and Keep (the fine-tunes') at 100 %: no 4-step model reaches them
    strict.write_text(source.replace("swap_largest = 0.0", "swap_largest = 1.0", 1)
                      .replace("keep = 0.0", "keep = 1.0", 1))
    assert "swap_largest = 1.0" in strict.read_text() and "keep = 1.0" in strict.read_text()
    try:
        again = lab(out, strict)
        assert again["ran"] == ["report"]
        md = (out / "report.md").read_text(encoding="utf-8")
        res = numbers(out)["object_sets"]["simco"]
        trained = [g for g in res["gates"]["models"].values() if g["trained"]]
        assert trained and all(not g["passed"] for g in trained)
        for sid, g in res["gates"]["models"].items():  # each kind fails on its own gate
            if g["trained"]:
                assert ("Keep" if sid.startswith("probe-finetune-") else "swap largest") in g["failed"], sid
                if sid.startswith("probe-finetune-"):  # short-caption swaps are a fine-tune's result, not its gate
                    assert "swap largest" not in g["failed"], sid
        assert "**fail**: swap L" in md and "**fail**: Keep" in md and "0 of 14 trained models pass" in md
        assert "A line fitted through all" not in md
        assert md.count("cannot answer") >= 6
        assert "cannot answer what the DeBias analyses" in md  # the section says so instead of vanishing
        assert all(s["mean"] is None for s in res["dose_response"]["tor_3"]["first_share"].values())
    finally:
        lab(out)  # the module's later tests read the recipe's own report


def test_a_folder_holding_another_recipe_is_refused(run_dir, tmp_path):
    out, _ = run_dir
    other = tmp_path / "other.toml"
    other.write_text(RECIPE.read_text(encoding="utf-8").replace('name = "order-bias"', 'name = "other"', 1))
    err = lab(out, other, expect=2)["stderr"].strip().splitlines()
    assert len(err) == 1 and "--resume" in err[0] and "'order-bias'" in err[0]
    err = lab(out, RECIPE, scale="small", expect=2)["stderr"]
    assert "scale" in err and "--overwrite" in err
