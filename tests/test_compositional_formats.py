"""The compositional benchmarks added to `comco eval compositional` (SugarCrepe++, EqBen, ARO's macro
accuracies and COCO/Flickr30k-Order, What'sUp's pairs, sets and spatial subsets, VALSE): each read
from a fixture written here in its released layout and scored on planted embeddings where the
authors' definition gives a known answer."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from support.planted import PlantedEmbedder as Planted

from comco.errors import UserError
from comco.probes.natural import compositional as compo
from comco.probes.natural import word_order
from comco.probes.stats import macro_accuracy

RED, GREEN, BLUE = (255, 0, 0), (0, 255, 0), (0, 0, 255)
R, G, B = np.eye(3)


def image(path: Path, colour, size=(8, 8)) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, colour).save(path)
    return path


def scored(name, root, embedder, **options):
    split = compo.load_compositional(name, root, **options)
    paths = compo.crop_images(split.trials, root) if compo.needs_preparing(split.trials) else None
    hits = compo.evaluate_compositional(embedder, split, paths)
    return split, hits, compo.summarise(split, hits, n_boot=200)


def unit(v):
    return v / np.linalg.norm(v)


# ---------------------------------------------------------------- SugarCrepe++

def write_scpp(root: Path) -> Path:
    image(root / "images" / "000000222235.jpg", RED)
    image(root / "images" / "000000480021.jpg", GREEN)
    entries = [  # (image, p1, p2, negative)
        ("000000222235.jpg", "p1 red", "p2 red", "n green"),        # ITT and TOT
        ("000000222235.jpg", "p1 red", "p2 blue", "n purple"),      # caption 1 only; TOT fails
        ("000000480021.jpg", "p1 red", "p2 red", "n green"),        # image prefers n; TOT holds
        ("000000222235.jpg", "p1 red", "p2 red", "n red"),          # ties: nothing holds
    ]
    (root / "data").mkdir()
    (root / "data" / "swap_obj.json").write_text(json.dumps(
        [{"id": i, "filename": f, "caption": p1, "caption2": p2, "negative_caption": n}
         for i, (f, p1, p2, n) in enumerate(entries)]))
    (root / "data" / "notes.json").write_text(json.dumps({"about": "not a category file"}))
    return root


def test_sugarcrepe_pp_itt_and_tot_as_its_authors_define_them(tmp_path):
    root = write_scpp(tmp_path / "scpp")
    texts = {"p1 red": R, "p2 red": R, "p2 blue": B, "n green": G, "n purple": unit(R + B), "n red": R}
    split, hits, s = scored("sugarcrepe-pp", root, Planted(texts))
    assert hits == {"ITT": [True, False, False, False], "TOT": [True, False, True, False],
                    "ITT caption 1": [True, True, False, False], "ITT caption 2": [True, False, False, False]}
    assert s["ITT"]["all"]["acc"] == 0.25 and s["ITT"]["all"]["chance"] == pytest.approx(1 / 3)
    assert s["TOT"]["swap_obj"]["acc"] == 0.5 and s["TOT"]["all"]["chance"] == pytest.approx(1 / 3)
    assert s["ITT caption 1"]["all"]["chance"] == 0.5
    assert compo.COMPOSITIONAL["sugarcrepe-pp"].headline == ("ITT", "TOT")


def test_sugarcrepe_and_sugarcrepe_pp_files_are_told_apart(tmp_path):
    # SugarCrepe's files are dicts, SugarCrepe++'s lists with caption2: each loader reads its own
    root = tmp_path / "both"
    image(root / "images" / "a.jpg", RED)
    (root / "swap_att.json").write_text(json.dumps(
        {"0": {"filename": "a.jpg", "caption": "x", "negative_caption": "y"}}))
    with pytest.raises(UserError, match="nothing to score"):
        compo.load_compositional("sugarcrepe-pp", root)
    assert len(compo.load_compositional("sugarcrepe", root).trials) == 1


# ---------------------------------------------------------------- EqBen

def write_eqben(root: Path) -> Path:
    image(root / "eqbenkubric_loc" / "0_a.png", RED)
    image(root / "eqbenkubric_loc" / "0_b.png", GREEN)
    (root / "eqbenyoucook2" / "v1").mkdir(parents=True)
    bgr_red = np.zeros((6, 6, 3), dtype=np.uint8)
    bgr_red[..., 2] = 255  # EqBen's .npy frames are BGR: red is the last channel
    np.save(root / "eqbenyoucook2" / "v1" / "f0.npy", bgr_red)
    np.save(root / "eqbenyoucook2" / "v1" / "f1.npy", bgr_red[..., ::-1].copy())  # blue
    (root / "eqben_kubric.json").write_text(json.dumps([
        {"image0": "eqbenkubric_loc/0_a.png", "caption0": "c red", "image1": "eqbenkubric_loc/0_b.png",
         "caption1": "c green"},
        {"image0": "eqbenkubric_loc/0_a.png", "caption0": "c green", "image1": "eqbenkubric_loc/missing.png",
         "caption1": "c red"}]))
    (root / "eqben_youcook2.json").write_text(json.dumps({"v1": [
        {"image0": "eqbenyoucook2/v1/f0.npy", "caption0": ["c red", "unused"], "image1": "eqbenyoucook2/v1/f1.npy",
         "caption1": ["c purple"]}]}))
    return root


def test_eqben_reads_lists_nested_dicts_and_npy_frames_with_winogrounds_scores(tmp_path):
    root = write_eqben(tmp_path / "eqben")
    split, hits, s = scored("eqben", root, Planted({"c red": R, "c green": G, "c purple": unit(R + B)}))
    assert split.skipped == {"missing_image": 1} and len(split.trials) == 2
    # kubric: all right; youcook2 (red frame, blue frame): the text score holds (the red frame: "c red"
    # 1 > "c purple" 0.71; the blue one: "c purple" 0.71 > "c red" 0), but "c purple" is as close to
    # the red frame as to the blue one (0.71 each), so the image score fails on the tie
    assert hits == {"text": [True, True], "image": [True, False], "group": [True, False]}
    assert set(s["group"]) == {"all", "eqbenkubric_loc", "eqbenyoucook2"}
    assert s["group"]["all"]["chance"] == pytest.approx(1 / 6)


# ---------------------------------------------------------------- ARO

def write_vg(root: Path, name: str, cases: list[dict]) -> Path:
    image(root / "images" / "red.jpg", RED, (10, 10))
    image(root / "images" / "green.jpg", GREEN, (10, 10))
    box = {"bbox_x": 0, "bbox_y": 0, "bbox_w": 10, "bbox_h": 10}
    (root / compo.ARO_FILES[name]).write_text(json.dumps([{**box, **c} for c in cases]))
    return root


def test_aro_vg_relation_macro_leaves_out_the_symmetric_relations(tmp_path):
    win = {"image_path": "red.jpg", "true_caption": "t red", "false_caption": "f green"}
    lose = {"image_path": "green.jpg", "true_caption": "t red", "false_caption": "f green"}
    cases = ([{**win, "relation_name": "on"}] * 2 + [{**lose, "relation_name": "on"}]
             + [{**win, "relation_name": "next to"}]  # symmetric in ARO's list: not in the macro
             + [{**lose, "relation_name": "above"}])
    split, hits, s = scored("aro-vg-relation", write_vg(tmp_path / "vgr", "vg-relation", cases),
                            Planted({"t red": R, "f green": G}))
    assert hits["accuracy"] == [True, True, False, True, False]
    assert s["accuracy"]["all"]["acc"] == pytest.approx(3 / 5)
    macro = s["macro accuracy"]["all"]
    assert macro["acc"] == pytest.approx((2 / 3 + 0) / 2) and macro["groups"] == 2 and macro["n"] == 4
    assert macro["left_out_categories"] == 1 and macro["chance"] == 0.5 and "symmetric" in macro["rule"]


def test_aro_vg_attribution_macro_keeps_pairs_with_25_items(tmp_path):
    texts = {"true_caption": "t red", "false_caption": "f green"}
    win = {"image_path": "red.jpg", **texts, "attributes": ["white", "black"]}
    lose = {"image_path": "green.jpg", **texts, "attributes": ["red", "blue"]}
    split, hits, s = scored("aro-vg-attribution",
                            write_vg(tmp_path / "vga", "vg-attribution", [win] * 25 + [lose] * 2),
                            Planted({"t red": R, "f green": G}))
    assert {t.category for t in split.trials} == {"white_black", "red_blue"}  # ARO's keys
    assert s["accuracy"]["all"]["acc"] == pytest.approx(25 / 27)
    assert s["macro accuracy"]["all"]["acc"] == 1.0 and s["macro accuracy"]["all"]["left_out_categories"] == 1


TAGS = {"a": "DT", "the": "DT", "red": "JJ", "small": "JJ", "bus": "NN", "dog": "NN", "street": "NN",
        "on": "IN", "drives": "VBZ", "down": "RP", ".": "."}


def tagger(text):
    return [(t, TAGS.get(t.lower(), "NN")) for t in text.replace(".", " .").split()]


def test_word_order_foils_move_only_what_aro_moves():
    caption = "A small red dog drives the red bus down a street."
    tagged = tagger(caption)
    tokens = [t for t, _ in tagged]
    for seed in range(20):
        a, b, within, across = (f.split(" ") for f in word_order.perturb(tagged, np.random.default_rng(seed)))
        for foil in (a, b, within, across):
            assert sorted(foil) == sorted(tokens)  # a permutation of the caption's tokens
        nouns = [i for i, (_, t) in enumerate(tagged) if t in word_order.NOUNS]
        adjs = [i for i, (_, t) in enumerate(tagged) if t in word_order.ADJECTIVES]
        fixed = [i for i in range(len(tokens)) if i not in nouns + adjs]
        assert [a[i] for i in fixed] == [tokens[i] for i in fixed]  # 1: only nouns and adjectives move
        assert sorted(a[i] for i in nouns) == sorted(tokens[i] for i in nouns)
        assert [b[i] for i in nouns + adjs] == [tokens[i] for i in nouns + adjs]  # 2: they stay
        for k in range(0, len(tokens), 3):  # 3: each trigram keeps its place and its words
            assert sorted(within[k:k + 3]) == sorted(tokens[k:k + 3])
        assert is_trigram_shuffle(across, [tuple(tokens[k:k + 3]) for k in range(0, len(tokens), 3)])


def is_trigram_shuffle(words: list[str], groups: list[tuple]) -> bool:
    """Whether words is the groups concatenated in some order (4: whole trigrams move)."""
    if not groups:
        return not words
    return any(tuple(words[:len(g)]) == g and is_trigram_shuffle(words[len(g):], groups[:i] + groups[i + 1:])
               for i, g in enumerate(groups))


def test_pre_caption_is_blips():
    assert word_order.pre_caption('A Man (riding) a "horse".') == "a man riding a horse"
    assert word_order.pre_caption(" ".join(["w"] * 40)) == " ".join(["w"] * 30)


@pytest.mark.parametrize("name, file, folder", [("aro-coco-order", "coco_karpathy_test.json", "val2014"),
                                               ("aro-flickr30k-order", "flickr30k_test.json", "flickr30k-images")])
def test_aro_order_drops_identical_foils_and_resamples_images(tmp_path, name, file, folder):
    root = tmp_path / "order"
    image(root / folder / "1.jpg", RED)
    image(root / folder / "2.jpg", GREEN)
    (root / file).write_text(json.dumps([
        {"image": f"{folder}/1.jpg",
         "caption": ["A small red dog drives the red bus down a street.", "A dog on the street.", "The dog runs."]},
        {"image": f"{folder}/2.jpg", "caption": ["A red bus drives down a street."]},
        {"image": f"{folder}/3.jpg", "caption": ["A dog."]}]))
    truths = {word_order.pre_caption(c) for c in ("A small red dog drives the red bus down a street.",
                                                  "A dog on the street.", "The dog runs.",
                                                  "A red bus drives down a street.")}
    planted = Planted(default=lambda t: R if t in truths else G)  # every true caption reads red
    split, hits, s = scored(name, root, planted, tagger=tagger)
    assert len(split.trials) == 4 and split.skipped["missing_image"] == 1
    # "the dog runs": one noun, no adjective: ARO's first foil is the caption itself, left out and counted
    assert split.skipped["foil_identical_to_caption"] >= 1 and len(split.trials[2].captions) < 5
    assert all(t.captions[0] not in t.captions[1:] for t in split.trials)
    assert hits["accuracy"] == [True, True, True, False]  # the green image prefers every foil
    acc = s["accuracy"]["all"]
    assert acc["acc"] == pytest.approx(3 / 4) and acc["clusters"] == 2  # resampled by image
    assert acc["chance"] == pytest.approx(np.mean([1 / len(t.captions) for t in split.trials]))


def test_aro_order_without_spacy_is_one_line(tmp_path, monkeypatch):
    import builtins

    real = builtins.__import__
    monkeypatch.setattr(builtins, "__import__",
                        lambda name, *a, **k: (_ for _ in ()).throw(ImportError(name)) if name == "spacy"
                        else real(name, *a, **k))
    root = tmp_path / "f"
    image(root / "flickr30k-images" / "1.jpg", RED)
    (root / "flickr30k_test.json").write_text(json.dumps([{"image": "flickr30k-images/1.jpg", "caption": ["a dog"]}]))
    with pytest.raises(UserError, match="pip install spacy"):
        compo.load_compositional("aro-flickr30k-order", root)


# ---------------------------------------------------------------- What'sUp

def test_whatsup_pairs_sets_and_spatial_subsets(tmp_path):
    root = tmp_path / "whatsup"
    colours = {"left_of": RED, "right_of": GREEN, "on": BLUE, "under": BLUE}
    options = {"left_of": "left", "right_of": "right", "on": "on", "under": "under"}
    cases = []
    for prep, colour in colours.items():
        name = f"mug_{prep}_plate.jpeg"
        image(root / "controlled_images" / name, colour)
        first = options[prep]
        cases.append({"image_path": f"data/controlled_images/{name}",
                      "caption_options": [f"mug {o} plate" for o in [first, *(set(options.values()) - {first})]]})
    (root / "controlled_images_dataset.json").write_text(json.dumps(cases))
    image(root / "val2017" / "000000000139.jpg", RED)
    (root / "coco_qa_one_obj.json").write_text(json.dumps([[139, "a dog on the left", "a dog on the right"]]))
    texts = {"mug left plate": R, "mug right plate": G, "mug on plate": B, "mug under plate": unit(B + 0.1 * R),
             "a dog on the left": R, "a dog on the right": G}
    split, hits, s = scored("whatsup", root, Planted(texts))
    # left, right and on are won; "under" (a blue image) loses to "on"
    assert hits["accuracy"] == [True, True, True, False, True]
    assert s["accuracy"]["controlled A"]["chance"] == 0.25 and s["accuracy"]["COCO-spatial one object"]["chance"] == 0.5
    assert s["accuracy"]["all"]["chance"] == pytest.approx((4 * 0.25 + 0.5) / 5)
    pair, sets = s["pair accuracy"]["all"], s["set accuracy"]["all"]
    assert (pair["acc"], pair["n"], pair["chance"]) == (0.5, 2, 1 / 16)  # left/right won, on/under lost
    assert (sets["acc"], sets["n"], sets["chance"]) == (0.0, 1, 1 / 256)


# ---------------------------------------------------------------- VALSE

def test_valse_scores_only_valid_foils(tmp_path):
    root = tmp_path / "valse"
    image(root / "images" / "exercising_255.jpg", RED)
    image(root / "images" / "v7w_1.jpg", GREEN)
    entry = {"dataset": "SWiG", "linguistic_phenomena": "actions", "classes": "man", "classes_foil": "torso"}
    (root / "data").mkdir(parents=True)
    (root / "data" / "actant-swap.json").write_text(json.dumps({
        "actions_test_0": {**entry, "image_file": "exercising_255.jpg", "caption": "A man exercises his torso.",
                           "foil": "A torso exercises for a man.", "mturk": {"foil": 0, "caption": 3, "other": 0}},
        "actions_test_1": {**entry, "image_file": "exercising_255.jpg", "caption": "cap", "foil": "foil",
                           "mturk": {"foil": 2, "caption": 1, "other": 0}},
        "actions_test_2": {**entry, "image_file": "missing.jpg", "caption": "cap", "foil": "foil",
                           "mturk": {"foil": 0, "caption": 2, "other": 1}}}))
    (root / "data" / "existence.json").write_text(json.dumps({
        "existence_0": {"dataset": "visual7w", "image_file": "v7w_1.jpg", "caption": "There are dogs.",
                        "foil": "There are no dogs.", "mturk": {"foil": 0, "caption": 2, "other": 1}}}))
    texts = {"A man exercises his torso.": R, "A torso exercises for a man.": G, "There are dogs.": R,
             "There are no dogs.": G}
    split, hits, s = scored("valse", root, Planted(texts))
    assert split.skipped == {"not_a_valid_foil": 1, "missing_image": 1}
    assert hits["accuracy"] == [True, False]
    assert set(s["accuracy"]) == {"all", "actant-swap", "existence"} and s["accuracy"]["all"]["chance"] == 0.5


def test_winoground_reads_the_hf_repository_layout(tmp_path):
    root = tmp_path / "wg"
    image(root / "data" / "images" / "ex_0_img_0.png", RED)
    image(root / "data" / "images" / "ex_0_img_1.png", GREEN)
    (root / "data" / "examples.jsonl").write_text(json.dumps(
        {"id": 0, "image_0": "ex_0_img_0", "image_1": "ex_0_img_1", "caption_0": "r", "caption_1": "g",
         "tag": "Object", "secondary_tag": "", "num_main_preds": 1, "collapsed_tag": "Object"}) + "\n")
    _, hits, _ = scored("winoground", root, Planted({"r": R, "g": G}))
    assert hits == {"text": [True], "image": [True], "group": [True]}


# ---------------------------------------------------------------- the macro interval

def test_macro_interval_resamples_within_each_group():
    # one group of 1 win and one of 100 losses: the macro is 50 % whatever is resampled within groups
    hits = np.array([1.0] + [0.0] * 100)
    groups = np.array(["a"] + ["b"] * 100)
    stat = macro_accuracy(hits, groups, chance=0.5, n_boot=300)
    assert stat["acc"] == 0.5 and stat["lo"] == stat["hi"] == 0.5 and stat["groups"] == 2
    mixed = macro_accuracy(np.array([1.0, 0.0] * 30), np.array(["a"] * 60), n_boot=300)
    assert mixed["lo"] < 0.5 < mixed["hi"]


# ---------------------------------------------------------------- through the command, a tiny random model

@pytest.mark.torch
@pytest.mark.parametrize("name, write, metrics", [
    ("sugarcrepe-pp", write_scpp, {"ITT", "TOT", "ITT caption 1", "ITT caption 2"}),
    ("eqben", write_eqben, {"text", "image", "group"}),
    ("aro-vg-relation", lambda root: write_vg(root, "vg-relation", [
        {"image_path": "red.jpg", "true_caption": "t", "false_caption": "f", "relation_name": "on"}]),
     {"accuracy", "macro accuracy"}),
])
def test_new_benchmarks_through_the_command(tmp_path, name, write, metrics):
    from typer.testing import CliRunner

    from comco.cli.eval import app

    out = tmp_path / "out"
    args = ["compositional", "--benchmark", name, "--root", str(write(tmp_path / "root")), "--model", "ViT-S-32",
            "--pretrained", "none", "--device", "cpu", "--quiet", "--no-cache", "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    payload = json.loads((out / "results.json").read_text())
    assert set(payload["models"][0]["scores"]) == metrics
    assert payload["headline"] == list(compo.COMPOSITIONAL[name].headline)
    page = (out / "compositional.md").read_text()
    assert "## Every model over the whole benchmark" in page and "| chance |" in page
