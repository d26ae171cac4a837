"""`comco probe` on a tiny dataset that `comco render` made (draft, 64 px), through the CLI.

The stand-in images of test_probes_end_to_end exercise every probe; this test checks
the real path: Blender renders with measured sizes and single-object references, a
random ViT-S-32, and TOR/IOR numbers recomputed here, independently, from the raw
open_clip model (full-length text encoding, no cache, our own role bookkeeping).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest
from PIL import Image

pytestmark = [pytest.mark.bpy, pytest.mark.torch]
pytest.importorskip("bpy")
pytest.importorskip("torch")

COMCO = [sys.executable, "-m", "comco.cli"]
LABEL = "ViT-S-32 (none)"
TEMPLATES = ["and", "long"]
ORDINALS = ["1st", "2nd", "3rd", "4th"]
AMBIGUOUS = 1e-5  # top-1 margins below this may flip with float rounding (batching); either answer is allowed
# (a random image tower puts every 64 px render at cosine ~0.99 to every other, margins down to ~4e-5)


def comco(*args):
    r = subprocess.run([*COMCO, *map(str, args)], capture_output=True, text=True)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert "Traceback" not in r.stderr
    return r


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rendered")
    ds, out = tmp / "ds", tmp / "out"
    comco("render", "--object-set", "simco", "--objects", "2-4", "--n", "8", "--singles", "--preset", "draft",
          "--resolution", "64", "--quiet", "--out", ds)
    comco("probe", ds, "--model", "ViT-S-32", "--pretrained", "none", "--probes", "tor,ior",
          "--templates", ",".join(TEMPLATES), "--bootstrap", "200", "--cache", tmp / "cache", "--out", out,
          "--quiet")
    records = [json.loads(x) for x in (ds / "scenes.jsonl").read_text().splitlines()]
    singles = [json.loads(x) for x in (ds / "singles" / "singles.jsonl").read_text().splitlines()]
    results = json.loads((out / "results.json").read_text())
    return ds, out, records, singles, results


def by_count(records):
    return Counter(len(r["objects"]) for r in records)


def test_rendered_dataset_is_what_the_probe_needs(run):
    ds, _, records, singles, _ = run
    assert len(records) == 8 and set(by_count(records)) == {2, 3, 4}
    assert len(singles) == 18 and all((ds / s["image"]).is_file() for s in singles)
    for r in records:
        assert Image.open(ds / r["image"]).size == (64, 64)
        assert all(o["measured"]["pixels"] > 0 for o in r["objects"])


def test_results_name_the_dataset_model_and_probes(run):
    ds, _, records, singles, res = run
    info = json.loads((ds / "dataset.json").read_text())
    d = res["dataset"]
    assert d["records"] == len(records) and d["gallery"] == len(singles) == 18
    assert d["object_set"] == "simco" and d["object_set_hash"] == info["object_set_hash"]
    assert d["hash"] == info["config_hash"]
    (m,) = res["models"]
    assert m["label"] == LABEL and m["identity"].startswith("open_clip/ViT-S-32/random")
    assert m["cache"]["image_encoded"] == len(records) + len(singles)  # every image embedded once
    assert set(res["probes"]) == {"tor", "ior", "ior_slot"} and res["skipped"] == {}


def check_stats(stats, roles, n, chance=None):
    assert [s["role"] for s in stats] == roles
    for s in stats:
        assert s["n"] == n
        if n:
            assert 0 <= s["lo"] <= s["acc"] <= s["hi"] <= 1
        if chance is not None:
            assert s["chance"] == pytest.approx(chance)


def test_tor_counts_match_the_captions(run):
    _, _, records, _, res = run
    groups = res["probes"]["tor"][LABEL]
    assert [(g["template"], g["n_objects"]) for g in groups] == [(t, n) for t in TEMPLATES for n in (2, 3, 4)]
    for g in groups:
        n = g["n_objects"]
        expected = sum(len(r["mention_orders"]) for r in records if len(r["objects"]) == n)
        assert g["queries"] == expected and g["skipped"] == 0 and g["gallery"] == 18
        check_stats(g["metrics"]["unconditional"], ORDINALS[:n], expected, chance=1 / 18)
        check_stats(g["metrics"]["conditional"], ORDINALS[:n], g["kept_conditional"])
        assert sum(s["acc"] for s in g["metrics"]["unconditional"]) <= 1 + 1e-9
        if g["kept_conditional"]:
            assert sum(s["acc"] for s in g["metrics"]["conditional"]) == pytest.approx(1.0)


def test_ior_counts_match_the_images(run):
    _, _, records, _, res = run
    counts = by_count(records)
    groups = res["probes"]["ior"][LABEL]
    assert [g["n_objects"] for g in groups] == [2, 3, 4]
    for g in groups:
        n = g["n_objects"]
        assert g["queries"] == counts[n] and g["skipped"] == 0 and g["gallery"] == 18
        roles = ["largest"] + [f"{ORDINALS[k]} largest" for k in range(1, n)]
        check_stats(g["metrics"]["unconditional"], roles, counts[n], chance=1 / 18)
    for g in res["probes"]["ior_slot"][LABEL]:
        n, stats = g["n_objects"], g["metrics"]["unconditional"]
        slots = Counter((o["slot"], o is max(r["objects"], key=lambda o: o["measured"]["pixels"]))
                        for r in records if len(r["objects"]) == n for o in r["objects"])
        for s in stats:  # one trial per image for each object in that slot with that size
            slot, size = s["role"].split("/")
            assert s["n"] == slots[(slot, size == "large")], s["role"]
        assert sum(s["n"] for s in stats if s["role"].endswith("/large")) == counts[n]
        assert sum(s["n"] for s in stats) == n * counts[n]


@pytest.fixture(scope="module")
def raw_model():
    """The probe's random ViT-S-32, used bare: open_clip's own full-length encoders."""
    import open_clip

    from comco.models import load_model

    loaded = load_model("ViT-S-32", "none")
    return loaded.model, loaded.preprocess, open_clip.get_tokenizer("ViT-S-32")


def top1(sim):
    order = np.argsort(-sim, axis=1)
    margin = sim[np.arange(len(sim)), order[:, 0]] - sim[np.arange(len(sim)), order[:, 1]]
    return order[:, 0], margin < AMBIGUOUS


def assert_hits_agree(reported, hit, ambiguous, what):
    """The probe's hit count equals ours, give or take trials whose top-1 is a near tie."""
    sure = int((hit & ~ambiguous).sum())
    assert sure <= reported <= sure + int(ambiguous.sum()), (what, reported, sure, int(ambiguous.sum()))


def test_tor_and_ior_agree_with_a_recomputation(run, raw_model):
    import torch
    import torch.nn.functional as F

    ds, _, records, singles, res = run
    model, preprocess, tokenizer = raw_model
    names = [s["name"] for s in singles]  # simco's 18 names, one reference render each
    with torch.inference_mode():
        def text(ts):
            return F.normalize(model.encode_text(tokenizer(ts)), dim=-1).numpy()

        def image(paths):
            return F.normalize(model.encode_image(torch.stack([preprocess(Image.open(p).convert("RGB"))
                                                               for p in paths])), dim=-1).numpy()

        ties = []  # near ties over all groups: a group of two images may hold one, the whole run few
        gallery = text(names)  # the `and` template writes a single object as its bare name
        refs = image([ds / s["image"] for s in singles])
        for n in (2, 3, 4):
            recs = [r for r in records if len(r["objects"]) == n]
            caps, want = [], []
            for r in recs:
                for order, cap in zip(r["mention_orders"], r["captions"]["and"]):
                    caps.append(cap)
                    want.append([names.index(r["objects"][i]["name"]) for i in order])
            got, amb = top1(text(caps) @ gallery.T)
            ties += list(amb)
            g = next(g for g in res["probes"]["tor"][LABEL] if g["template"] == "and" and g["n_objects"] == n)
            for pos, s in enumerate(g["metrics"]["unconditional"]):
                assert_hits_agree(round(s["acc"] * s["n"]), got == np.array(want)[:, pos], amb, f"tor {n} {pos}")

            got, amb = top1(image([ds / r["image"] for r in recs]) @ refs.T)
            ties += list(amb)
            by_size = np.array([[names.index(o["name"]) for o in
                                 sorted(r["objects"], key=lambda o: -o["measured"]["pixels"])] for r in recs])
            g = next(g for g in res["probes"]["ior"][LABEL] if g["n_objects"] == n)
            for rank, s in enumerate(g["metrics"]["unconditional"]):
                assert_hits_agree(round(s["acc"] * s["n"]), got == by_size[:, rank], amb, f"ior {n} {rank}")
        assert np.mean(ties) <= 0.25, "too many near ties to check anything"


def test_tables_and_plots(run):
    _, out, _, _, res = run
    for probe in ("tor", "ior", "ior_slot"):
        md = (out / f"{probe}.md").read_text()
        groups = res["probes"][probe][LABEL]
        assert md.count(f"| {LABEL} |") == 2 * len(groups)  # one row per group and metric
        assert md.count("| *chance* |") >= len(groups)
        rows = (out / f"{probe}.csv").read_text().splitlines()
        assert rows[0] == "probe,group,metric,source,model,role,value,lo,hi,n,clusters,chance"
        measured = [r for r in rows[1:] if ",measured," in r]
        assert len(measured) == sum(len(stats) for g in groups for stats in g["metrics"].values())
    plots = sorted(p.name for p in (out / "plots").iterdir())
    assert plots == ["ior.png", "ior_slot.png", "tor.png"]  # one figure per probe, object counts as its panels
    for p in plots:
        with Image.open(out / "plots" / p) as im:
            assert im.format == "PNG" and im.size[0] > 100
    assert all(f"](plots/{p})" in (out / "report.md").read_text() for p in plots)
