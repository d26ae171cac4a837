"""`comco captions stats` on COCO-format files written here, with known answers: plurals, a
synonym, a tie for the largest, an unmatched caption, a category mentioned twice, an absent
category whose name hides another ("hot dog" / "dog"), and captions of unannotated images."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from comco.errors import UserError
from comco.probes.natural import caption_bias, load_corpus
from comco.probes.natural.corpus import plural

COMCO = [sys.executable, "-m", "comco.cli"]
CATEGORIES = [(1, "person"), (2, "horse"), (3, "dog"), (4, "cat"), (5, "couch"), (6, "pizza"), (7, "hot dog")]
# image -> [(category id, area)], several instances of one category add up
INSTANCES = {1: [(3, 3000), (3, 2000), (4, 1000), (5, 3000)], 2: [(1, 100), (2, 100)], 3: [(6, 800), (3, 200)]}
CAPTIONS = [
    (1, "A dog sleeps next to a cat."),  # 2 objects, the largest (dog, 5000 in two instances) first
    (1, "Two cats and a dog on a sofa"),  # plural, synonym: cat, dog, couch; dog 2nd of 3
    (1, "A dog chasing a dog and a cat"),  # dog twice: counted once, where first named
    (2, "A man riding a horse."),  # person (synonym man) and horse tie for largest
    (3, "A hot dog beside a pizza and a dog."),  # hot dog is not annotated here and hides no dog
    (3, "A view of the sky."),  # nothing matched
    (9, "A dog and a cat."),  # image 9 has captions but no instances
]


def write_coco(folder: Path, captions=CAPTIONS, encoding="utf-8") -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    images = [{"id": i, "file_name": f"{i:012d}.jpg", "width": 640, "height": 480} for i in (1, 2, 3, 9)]
    caps = {"info": {}, "licenses": [], "images": images,
            "annotations": [{"image_id": i, "id": 100 + j, "caption": t} for j, (i, t) in enumerate(captions)]}
    anns, k = [], 0
    for image, objs in INSTANCES.items():
        for cat, area in objs:
            k += 1
            anns.append({"id": k, "image_id": image, "category_id": cat, "area": area, "iscrowd": 0,
                         "bbox": [0, 0, 10, 10], "segmentation": [[0, 0, 10, 0, 10, 10]]})
    inst = {"info": {}, "licenses": [], "images": images, "annotations": anns,
            "categories": [{"id": i, "name": n, "supercategory": "x"} for i, n in CATEGORIES]}
    (folder / "captions_val2017.json").write_bytes(json.dumps(caps, ensure_ascii=False).encode(encoding))
    (folder / "instances_val2017.json").write_text(json.dumps(inst), encoding="utf-8")
    return folder / "captions_val2017.json", folder / "instances_val2017.json"


def test_plural_rules():
    assert [plural(w) for w in ["dog", "bus", "bench", "sandwich", "baby", "toy", "wine glass", "box"]] == [
        "dogs", "buses", "benches", "sandwiches", "babies", "toys", "wine glasses", "boxes"]


def test_mentions_orders_and_sizes(tmp_path):
    corpus, left = load_corpus(*write_coco(tmp_path))
    got = {c.caption_id: (c.mentioned, c.areas, c.absent) for c in corpus}
    assert got[100] == (("dog", "cat"), (5000.0, 1000.0), ())
    assert got[101] == (("cat", "dog", "couch"), (1000.0, 5000.0, 3000.0), ())
    assert got[102] == (("dog", "cat"), (5000.0, 1000.0), ())
    assert got[103] == (("person", "horse"), (100.0, 100.0), ())
    assert got[104] == (("pizza", "dog"), (800.0, 200.0), ("hot dog",))
    assert got[105] == ((), (), ())
    assert 106 not in got and left["captions_without_instances"] == 1


def test_position_shares_and_the_corpus_p(tmp_path):
    corpus, _ = load_corpus(*write_coco(tmp_path))
    r = caption_bias(corpus, n_boot=200)
    assert r["counts"] == {"captions": 6, "fewer_than_2": 1, "tie_for_largest": 1, "more_than_5": 0, "kept": 4}
    by_k = {row["k"]: row for row in r["by_k"]}
    assert (by_k[2]["captions"], by_k[2]["images"]) == (3, 2)
    assert [s["acc"] for s in by_k[2]["shares"]] == [1.0, 0.0]
    assert [s["acc"] for s in by_k[3]["shares"]] == [0.0, 1.0, 0.0]
    assert by_k[4]["captions"] == 0
    # hits minus chance, over one minus chance: 1, 1, 1 (k = 2, first) and -1/2 (k = 3, not first)
    assert r["p"]["mean"] == pytest.approx((3 - 0.5) / 4)
    assert r["largest_first"]["acc"] == pytest.approx(3 / 4)
    assert r["p"]["lo"] <= r["p"]["mean"] <= r["p"]["hi"]


def test_a_user_synonym_table_is_checked(tmp_path):
    caps, inst = write_coco(tmp_path)
    table = tmp_path / "syn.toml"
    table.write_text('[synonyms]\ndog = ["pup"]\n', encoding="utf-8")
    corpus, _ = load_corpus(caps, inst, table)
    assert {c.caption_id: c.mentioned for c in corpus}[103] == ("horse",)  # "man" is no longer a person
    table.write_text('[synonyms]\ndgo = ["pup"]\n', encoding="utf-8")
    with pytest.raises(UserError, match="'dgo' is not a category"):
        load_corpus(caps, inst, table)
    table.write_text('[synonyms]\ndog = ["pet"]\ncat = ["pet"]\n', encoding="utf-8")
    with pytest.raises(UserError, match="'pet' names both"):
        load_corpus(caps, inst, table)


def _lab_run(folder: Path) -> tuple[Path, np.ndarray, np.ndarray]:
    xs = np.array([0, 0, 0, 0.5, 0.5, 0.5, 1, 1, 1], float)
    ys = 0.33 + 0.5 * xs + np.array([0.02, -0.01, 0.0, 0.03, -0.02, 0.01, -0.03, 0.02, 0.0])
    shares = {f"{p:g}": {"values": ys[xs == p].tolist()} for p in (0, 0.5, 1)}
    folder.mkdir()
    (folder / "results.json").write_text(json.dumps(
        {"object_sets": {"simco": {"dose_response": {"tor_3": {"first_share": shares}}}}}), encoding="utf-8")
    return folder, xs, ys


def test_the_cli_writes_tables_and_places_p_on_a_lab_run(tmp_path):
    caps, inst = write_coco(tmp_path / "coco")
    run, xs, ys = _lab_run(tmp_path / "lab")
    out = tmp_path / "out"
    r = subprocess.run([*COMCO, "captions", "stats", "--captions", caps, "--instances", inst, "--lab", run,
                        "--bootstrap", "200", "--out", out], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "corpus p = 0.625" in r.stdout
    payload = json.loads((out / "results.json").read_text())
    b, a = np.polyfit(xs, ys, 1)
    (pred,) = payload["lab_prediction"]
    assert pred["mean"] == pytest.approx(a + b * 0.625)
    assert pred["lo"] < pred["mean"] < pred["hi"] and pred["n"] == 3 and pred["note"] == ""
    md = (out / "caption-bias.md").read_text()
    assert "| 2 | 3 | 2 | 100.0 [" in md and "*published:*" in md and "predicted TOR first share" in md
    assert (out / "caption-bias.png").stat().st_size > 1000
    csv = (out / "positions.csv").read_text().splitlines()
    assert csv[0] == "k,position,share,lo,hi,captions,images" and len(csv) == 1 + 2 + 3 + 4 + 5


@pytest.mark.parametrize("case, message", [
    ("no-instances", "does not exist"),
    ("latin1", "is not UTF-8"),
    ("not-instances", "no 'categories'"),
    ("lab-without-results", "holds no results.json"),
    ("nothing-matched", "nothing to measure"),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, case, message):
    caps, inst = write_coco(tmp_path / "coco", captions=[(1, "Ein Hund und eine Katze, Café")] if case in (
        "latin1", "nothing-matched") else CAPTIONS, encoding="latin-1" if case == "latin1" else "utf-8")
    args = ["--captions", caps, "--instances", inst]
    if case == "no-instances":
        args[3] = tmp_path / "missing.json"
    if case == "not-instances":
        args[3] = caps
    if case == "lab-without-results":
        (tmp_path / "empty").mkdir()
        args += ["--lab", tmp_path / "empty"]
    out = tmp_path / "out"
    r = subprocess.run([*COMCO, "captions", "stats", *args, "--out", out], capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not out.exists()
