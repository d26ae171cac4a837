"""The pair probe: Winoground's scores where the answer is forced, near chance for random
embeddings, the swap-size split by which object the variant's caption names first, the
bootstrap intervals, the skipped pairs, and `comco probe --probes pairs` end to end."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from support.export import comco
from support.pairs import make_pairs, pair_records, write_pair_dataset
from support.probes import FakeEmbedder, invoke, make_dataset, planned_data

from comco.data.pairing import ONE_WAY, find_pairs
from comco.probes.pairs import CHANCE, CHANCE_ONE_WAY, SPLIT, pairs_probe, winoground_scores
from comco.probes.probe_data import ProbeData

FACTOR_TEMPLATE = {"swap-size": "sizes", "swap-slots": "relations", "remove": "and"}


def random_vec(key) -> np.ndarray:
    """A fixed random unit vector per key; 1024 dimensions keep two keys' cosine within about +-0.1."""
    rng = np.random.default_rng(int(hashlib.sha256(str(key).encode()).hexdigest()[:8], 16))
    v = rng.normal(size=1024)
    return v / np.linalg.norm(v)


def data_of(records) -> ProbeData:
    return ProbeData(root=Path("/pairs"), info={"object_set": "simco"}, records=records, singles=[],
                     names=[], image_path=lambda r: Path(r["image"]))


def by_image(records) -> dict[Path, dict]:
    return {Path(r["image"]): r for r in records}


def partner_of(records) -> dict[str, dict]:
    """variant id -> base, base id + factor -> variant."""
    pairs, _ = find_pairs(records)
    out = {}
    for p in pairs:
        out[p.variant["id"]] = p.base
        out[(p.base["id"], p.factor)] = p.variant
    return out


def group(groups, factor, n=None) -> dict:
    return next(g for g in groups if g["factor"] == factor and g["n_objects"] == n)


def score(g, metric="scores") -> dict[str, dict]:
    return {s["role"]: s for s in g["metrics"][metric]}


def test_winoground_scores_follow_the_definition():
    # sims[t, image, caption]
    sims = np.array([
        [[1, 0], [0, 1]],  # both right
        [[1, 0], [1, 0]],  # both images prefer caption 0: text fails; caption 0 ties its images: image fails
        [[0.9, 0.8], [0.1, 0.2]],  # image 0 wins both captions: text holds, image fails
        [[0.5, 0.5], [0.5, 0.5]],  # ties fail
    ], dtype=float)
    s = winoground_scores(sims)
    assert s["text"].tolist() == [True, False, True, False]
    assert s["image"].tolist() == [True, False, False, False]
    assert s["group"].tolist() == [True, False, False, False]
    assert s["matching"].tolist() == [True, False, True, False]  # 0.9 + 0.2 > 0.8 + 0.1


def test_group_matching_uses_the_2x2_sum_and_one_way_factors_compare_only_against_the_false_caption():
    # text and image both fail, yet the right pairing sums higher: TTM's matching holds
    sims = np.array([[[0.5, 0.6], [0.55, 0.9]]], dtype=float)
    s = winoground_scores(sims)
    assert (s["text"][0], s["image"][0], s["matching"][0]) == (False, False, True)
    # remove: the base caption (1 mentions the removed object) is false for the variant image (side 1);
    # the base image may prefer the variant's caption, which is only incomplete for it
    sims = np.array([[[0.2, 0.9], [0.1, 0.8]],  # variant image prefers its own caption; base caption its own image
                     [[0.9, 0.2], [0.8, 0.1]]])  # the variant image prefers the false base caption
    s = winoground_scores(sims, np.array([1, 1]))
    assert s["text"].tolist() == [True, False] and s["image"].tolist() == [True, True]
    assert s["group"].tolist() == [True, False]
    assert winoground_scores(sims)["text"].tolist() == [False, False]  # both ways: the base image fails
    # add: the variant caption is false for the base image (side 0)
    s = winoground_scores(np.array([[[0.9, 0.2], [0.8, 0.7]]]), np.array([0]))
    assert (s["text"][0], s["image"][0]) == (True, True)


def test_one_way_chances_are_those_of_their_comparisons():
    rng = np.random.default_rng(0)
    sims = rng.random((200_000, 2, 2))
    for one_way, chance in ((np.full(200_000, -1), CHANCE), (np.full(200_000, 1), CHANCE_ONE_WAY)):
        s = winoground_scores(sims, one_way)
        for role, p in chance.items():
            assert abs(s[role].mean() - p) < 0.005, (role, s[role].mean(), p)


def test_an_embedder_that_knows_each_image_scores_everything_and_its_mirror_nothing():
    records = pair_records(n=8)
    images = by_image(records)

    def own(path):  # the image is the mean of its own captions' vectors, under the factor's template
        r = images[path]
        factor = (r["pair"]["factor"] if r["pair"]["factor"] != "base" else None)
        caps = [c for t in ([FACTOR_TEMPLATE[factor]] if factor else FACTOR_TEMPLATE.values())
                for c in r["captions"][t]]
        v = np.sum([random_vec(c) for c in caps], axis=0)
        return v / np.linalg.norm(v)

    groups = pairs_probe(data_of(records), FakeEmbedder(random_vec, own), n_boot=50, seed=0)
    assert {g["factor"] for g in groups} == {"swap-size", "swap-slots", "remove"}
    for g in groups:
        for role, s in score(g).items():
            assert s["acc"] == 1.0, (g["key"], role)

    partner = partner_of(records)

    def swapped(path):  # a variant looks like its base's captions, a base like ... every variant's: no image fits
        r = images[path]
        if r["pair"]["factor"] == "base":
            return -own(path)
        return own(Path(partner[r["id"]]["image"]))

    groups = pairs_probe(data_of(records), FakeEmbedder(random_vec, swapped), n_boot=50, seed=0)
    for g in groups:
        assert score(g)["group"]["acc"] == 0.0, g["key"]


def test_a_bag_of_words_text_encoder_fails_every_swap_exactly():
    # "a large X and a small Y" and "a small X and a large Y" hold the same words: equal text
    # embeddings tie, and ties fail; the image side cannot rescue it (both captions are one vector)
    records = [r for r in pair_records(n=6) if r["pair"]["factor"] in ("base", "swap-size")]

    def bag(text):
        v = np.sum([random_vec(w) for w in sorted(text.split())], axis=0)  # one sum order: exact ties
        return v / np.linalg.norm(v)

    groups = pairs_probe(data_of(records), FakeEmbedder(bag, lambda p: random_vec(str(p))), n_boot=20, seed=0)
    for g in groups:
        s = score(g)
        assert s["text"]["acc"] == 0.0 and s["image"]["acc"] == 0.0 and s["group"]["acc"] == 0.0


def test_independent_random_embeddings_score_near_chance_with_intervals_around_it():
    records = pair_records(n=150, objects=(3,))
    groups = pairs_probe(data_of(records), FakeEmbedder(random_vec, lambda p: random_vec(str(p))),
                         n_boot=300, seed=1)
    g = group(groups, "swap-size", 3)
    assert g["pairs"] == 150 and g["queries"] == sum(len(r["mention_orders"]) for r in records
                                                     if r["pair"]["factor"] == "base")
    for role, s in score(g).items():
        assert s["chance"] == pytest.approx(CHANCE[role])
        assert s["lo"] < s["acc"] < s["hi"]
        assert s["clusters"] == 150  # resampled over pairs, not trials
        assert s["lo"] < CHANCE[role] < s["hi"], (role, s)
        assert abs(s["acc"] - CHANCE[role]) < 0.08


def test_swap_size_splits_by_whether_the_variant_names_its_new_largest_first():
    # Bases with one caption order each; the test decides which pairs the embedder gets right:
    # those whose variant caption opens with the object that became the largest.
    bases = []
    for k, r in enumerate(planned_data(n=16, objects=(2,)).records):
        big = [o["size_rank"] for o in r["objects"]].index(0)
        small = 1 - big
        # the variant's new largest is `small`: name it first in half of the pairs
        r["mention_orders"] = [[small, big] if k % 2 == 0 else [big, small]]
        bases.append((k % 2 == 0, r))
    records, right = [], set()
    for names_first, r in bases:
        recs = [x for x in make_pairs(r) if x["pair"]["factor"] in ("base", "swap-size")]
        records += recs
        if names_first:
            right.add(r["id"])
    images = by_image(records)
    partner = partner_of(records)

    def planted(path):
        rec = images[path]
        pid = rec["pair"]["id"]
        if rec["pair"]["factor"] == "base":
            mine, other = rec, partner[(pid, "swap-size")]
        else:
            mine, other = rec, partner[rec["id"]]
        return random_vec((mine if pid in right else other)["captions"]["sizes"][0])

    groups = pairs_probe(data_of(records), FakeEmbedder(random_vec, planted), n_boot=50, seed=0)
    g = group(groups, "swap-size", 2)
    assert set(g["metrics"]) == {"scores", *SPLIT.values()}
    first, later = score(g, SPLIT[True]), score(g, SPLIT[False])
    assert first["group"]["acc"] == 1.0 and first["group"]["n"] == 8
    assert later["group"]["acc"] == 0.0 and later["group"]["n"] == 8
    assert score(g)["group"]["acc"] == 0.5
    # the variant caption of a right pair opens with "a large": the split read the record, not the text
    assert all(partner[(pid, "swap-size")]["captions"]["sizes"][0].startswith("a large") for pid in right)


def test_identical_captions_and_orphan_variants_are_left_out_and_counted():
    records = pair_records(n=10, objects=(3,))
    # swap-slots of objects the relation does not name first leaves some captions unchanged
    pairs, _ = find_pairs(records)
    same = sum(a == b for p in pairs if p.factor == "swap-slots"
               for a, b in zip(p.base["captions"]["relations"], p.variant["captions"]["relations"]))
    assert same > 0  # the case exists in this data
    dropped = [r for r in records if r["id"] == records[0]["id"]]  # the first base goes: its variants are orphans
    kept = [r for r in records if r not in dropped]
    groups = pairs_probe(data_of(kept), FakeEmbedder(random_vec, lambda p: random_vec(str(p))), n_boot=0, seed=0)
    g = group(groups, "swap-slots", 3)
    first_same = sum(a == b for p in pairs if p.factor == "swap-slots" and p.id == records[0]["id"]
                     for a, b in zip(p.base["captions"]["relations"], p.variant["captions"]["relations"]))
    assert g["identical"] == same - first_same
    assert g["orphans"] == 1 and group(groups, "swap-size", 3)["orphans"] == 1
    total = sum(len(r["mention_orders"]) for r in kept
                if r["pair"]["factor"] == "swap-slots" and r["pair"]["id"] != records[0]["id"])
    assert g["queries"] == total - g["identical"]


def test_groups_per_object_count_and_all_counts():
    records = pair_records(n=12, objects=(2, 3))
    groups = pairs_probe(data_of(records), FakeEmbedder(random_vec, lambda p: random_vec(str(p))), n_boot=0, seed=0)
    for factor in ("swap-size", "swap-slots", "remove"):
        by_n = {g["n_objects"]: g for g in groups if g["factor"] == factor}
        assert set(by_n) == {2, 3, None}
        assert by_n[None]["pairs"] == by_n[2]["pairs"] + by_n[3]["pairs"] == 12
        assert by_n[None]["queries"] == by_n[2]["queries"] + by_n[3]["queries"]


@pytest.fixture(scope="module")
def pair_dataset(tmp_path_factory):
    return write_pair_dataset(tmp_path_factory.mktemp("pairs") / "ds", n=4)


def test_probe_pairs_end_to_end_writes_tables_and_the_page(pair_dataset, tmp_path):
    out = tmp_path / "out"
    res = invoke(pair_dataset, "--model", "ViT-S-32", "--pretrained", "none", "--probes", "pairs",
                 "--bootstrap", "20", "--no-cache", "--no-plots", "--quiet", "--out", out)
    assert res.exit_code == 0, res.output
    results = json.loads((out / "results.json").read_text())
    groups = results["probes"]["pairs"]["ViT-S-32 (none)"] if "ViT-S-32 (none)" in results["probes"]["pairs"] \
        else next(iter(results["probes"]["pairs"].values()))
    assert {g["factor"] for g in groups} == {"swap-size", "swap-slots", "remove"}
    csv = (out / "pairs.csv").read_text()
    assert "variant names the largest first" in csv and ",group," in csv
    page = (out / "report.md").read_text()
    assert "Counterfactual pairs" in page and "swap-size (sizes captions)" in page
    assert "16.7" in (out / "pairs.md").read_text()  # the group score's chance row
    assert "interval over pairs" in (out / "pairs.md").read_text()  # the bootstrap unit of this probe


def test_probe_pairs_on_a_dataset_without_pairs_is_one_line(tmp_path, capsys):
    ds = make_dataset(tmp_path / "plain", n=2, objects=(2,), resolution=32, singles=False)
    code, out, err = comco(capsys, "probe", ds, "--model", "ViT-S-32", "--pretrained", "none", "--probes", "pairs",
                           "--no-cache", "--out", tmp_path / "out")
    assert code == 2
    lines = (out + err).strip().splitlines()
    assert len(lines) == 1 and "no pair records" in lines[0] and "--pairs" in lines[0], lines
    assert not (tmp_path / "out" / "results.json").exists()


def test_the_all_counts_table_joins_its_factors_row_in_the_figure():
    from comco.probes.report import _family

    records = pair_records(n=6, objects=(2, 3))
    groups = pairs_probe(data_of(records), FakeEmbedder(random_vec, lambda p: random_vec(str(p))), n_boot=0, seed=0)
    rows = {(_family({"group": g["key"], "n_objects": g["n_objects"]}), g["factor"]) for g in groups}
    assert rows == {(f"{f} ({t} captions{', scored one way' if f in ONE_WAY else ''})", f)
                    for f, t in FACTOR_TEMPLATE.items()}
