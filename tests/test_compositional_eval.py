"""`comco eval compositional|zeroshot`: each benchmark read from a fixture in its released format and
scored on planted embeddings where the right score is known exactly (ties included: a tie is not a win)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from support.planted import PlantedEmbedder
from typer.testing import CliRunner

from comco.errors import UserError
from comco.probes.natural import compositional as compo
from comco.probes.natural import zeroshot as zs
from comco.probes.natural.scores import write_report

RED, GREEN, BLUE = (255, 0, 0), (0, 255, 0), (0, 0, 255)
V = {"r": np.array([1.0, 0, 0]), "g": np.array([0, 1.0, 0]), "b": np.array([0, 0, 1.0])}


def image(path: Path, colour, size=(8, 8)) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, colour).save(path)
    return path


def score(split, embedder, paths=None):
    hits = compo.evaluate_compositional(embedder, split, paths)
    return hits, compo.summarise(split, hits, n_boot=200)


# ---------------------------------------------------------------- the authors' definitions on arrays

def test_selection_needs_the_true_caption_strictly_above_every_foil():
    sims = np.array([[0.9, 0.1, 0.2, 0.3],   # win
                     [0.5, 0.5, 0.1, 0.1],   # tie with one foil: not a win
                     [0.4, 0.1, 0.6, 0.1],   # a foil above
                     [0.3, 0.2, 0.2, 0.29]])  # win by a hair
    assert compo.selection_hits(sims).tolist() == [True, False, False, True]


def test_winoground_scores_as_thrush_et_al_define_them():
    # s[c, i]: caption c with image i
    cases = {
        "both right": ([[0.9, 0.1], [0.1, 0.9]], (True, True, True)),
        "text only": ([[0.9, 0.95], [0.1, 0.99]], (True, False, False)),   # c0 prefers i1, so image fails
        "image only": ([[0.5, 0.1], [0.6, 0.9]], (False, True, False)),    # i0 prefers c1, so text fails
        "all ties": ([[0.5, 0.5], [0.5, 0.5]], (False, False, False)),
        "text tie": ([[0.5, 0.1], [0.5, 0.9]], (False, True, False)),      # s(c0,i0) == s(c1,i0)
        "swapped": ([[0.1, 0.9], [0.9, 0.1]], (False, False, False)),
    }
    s = np.array([c for c, _ in cases.values()])
    got = compo.winoground_hits(s)
    for k, (name, (_, want)) in enumerate(cases.items()):
        assert (got["text"][k], got["image"][k], got["group"][k]) == want, name


# ---------------------------------------------------------------- fixtures in the released formats

def write_sugarcrepe(root: Path) -> Path:
    image(root / "val2017" / "000000000139.jpg", RED)
    image(root / "val2017" / "000000000632.jpg", GREEN)
    entries = {
        "swap_att": {"0": ("000000000139.jpg", "red win", "green foil"),    # 1 vs 0: win
                     "1": ("000000000632.jpg", "red foil", "green true")},  # 0 vs 0: a tie
        "replace_rel": {"0": ("000000000139.jpg", "red tie a", "red tie b"),   # tie: not a win
                        "1": ("000000000632.jpg", "green win", "blue foil"),   # win
                        "2": ("000000000139.jpg", "missing", "x")},
    }
    for cat, items in entries.items():
        data = {k: {"filename": f, "caption": c, "negative_caption": n} for k, (f, c, n) in items.items()}
        if cat == "replace_rel":
            data["2"]["filename"] = "000000999999.jpg"  # not on disk: counted, not scored
        (root / f"{cat}.json").write_text(json.dumps(data))
    (root / "notes.json").write_text(json.dumps({"about": "not a category file"}))
    return root


SUGAR_TEXTS = {"red win": V["r"], "green foil": V["g"], "red foil": V["r"], "green true": V["b"],
               "red tie a": V["r"], "red tie b": V["r"], "green win": V["g"], "blue foil": V["b"]}


def test_sugarcrepe_fixture_scores_each_category(tmp_path):
    split = compo.load_compositional("sugarcrepe", write_sugarcrepe(tmp_path / "sc"))
    assert split.skipped == {"missing_image": 1} and len(split.trials) == 4
    hits, s = score(split, PlantedEmbedder(SUGAR_TEXTS))
    assert hits["accuracy"] == [False, True, True, False]  # replace_rel is read first, as its authors list it
    acc = s["accuracy"]
    assert acc["swap_att"]["acc"] == 0.5 and acc["replace_rel"]["acc"] == 0.5 and acc["all"]["acc"] == 0.5
    assert acc["all"]["n"] == 4 and acc["all"]["chance"] == 0.5 and acc["all"]["clusters"] == 4
    assert 0 <= acc["all"]["lo"] <= 0.5 <= acc["all"]["hi"] <= 1


def test_sugarcrepe_reads_a_comco_export_layout(tmp_path):
    from comco.data.export import sugarcrepe as fmt

    root = tmp_path / "export"
    image(root / fmt.IMAGES / "a.png", RED)
    (root / fmt.file_name("swap-size")).write_text(json.dumps(
        {"0": {"filename": "a.png", "caption": "red win", "negative_caption": "green foil", "comco": {}}}))
    split = compo.load_compositional("sugarcrepe", root)
    assert [t.category for t in split.trials] == ["swap_size"]
    assert score(split, PlantedEmbedder(SUGAR_TEXTS))[0]["accuracy"] == [True]


def write_winoground(root: Path) -> Path:
    from comco.data.export import winoground as fmt

    for name, colour in (("ex_0_img_0", RED), ("ex_0_img_1", GREEN), ("ex_1_img_0", RED), ("ex_1_img_1", BLUE)):
        image(root / fmt.IMAGES / f"{name}{fmt.IMAGE_EXTENSION}", colour)
    rows = [{"id": 0, "image_0": "ex_0_img_0", "image_1": "ex_0_img_1", "caption_0": "c red", "caption_1": "c green",
             "tag": "Object", "secondary_tag": "", "num_main_preds": 1, "collapsed_tag": "Object"},
            {"id": 1, "image_0": "ex_1_img_0", "image_1": "ex_1_img_1", "caption_0": "c purple",
             "caption_1": "c blue", "tag": "Relation", "secondary_tag": "", "num_main_preds": 1,
             "collapsed_tag": "Relation"}]
    (root / fmt.EXAMPLES).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def test_winoground_fixture_text_image_group(tmp_path):
    split = compo.load_compositional("winoground", write_winoground(tmp_path / "wg"))
    purple = (V["r"] + V["b"]) / np.sqrt(2)
    # Example 1: "c purple" ties between the red and blue images, so its image score fails; its
    # text score holds (red image: purple 0.71 > blue 0; blue image: blue 1 > purple 0.71).
    texts = {"c red": V["r"], "c green": V["g"], "c purple": purple, "c blue": V["b"]}
    hits, s = score(split, PlantedEmbedder(texts))
    assert hits == {"text": [True, True], "image": [True, False], "group": [True, False]}
    assert s["text"]["all"]["acc"] == 1.0 and s["image"]["all"]["acc"] == 0.5 and s["group"]["all"]["acc"] == 0.5
    assert (s["text"]["all"]["chance"], s["image"]["all"]["chance"], s["group"]["all"]["chance"]) == (
        0.25, 0.25, 1 / 6)
    assert set(s["group"]) == {"all", "Object", "Relation"}


def write_aro(root: Path) -> Path:
    im = Image.new("RGB", (20, 10), BLUE)
    im.paste(Image.new("RGB", (10, 10), RED), (0, 0))
    (root / "images").mkdir(parents=True)
    im.save(root / "images" / "2315375.jpg", format="PNG")  # lossless, so the halves tie exactly
    cases = [{"image_id": "2315375", "image_path": "2315375.jpg", "bbox_x": 0, "bbox_y": 0, "bbox_w": 10,
              "bbox_h": 10, "true_caption": "the red is left", "false_caption": "the blue is left",
              "relation_name": "to the left of"}]
    (root / "visual_genome_relation.json").write_text(json.dumps(cases))
    return root


def test_aro_vg_relation_scores_the_crop_not_the_whole_image(tmp_path):
    split = compo.load_compositional("aro-vg-relation", write_aro(tmp_path / "aro"))
    texts = {"the red is left": V["r"], "the blue is left": V["b"]}
    assert split.trials[0].box == (0, 0, 10, 10)
    assert score(split, PlantedEmbedder(texts))[0]["accuracy"] == [False]  # whole image: purple, a tie
    paths = compo.crop_images(split.trials, tmp_path)
    hits, s = score(split, PlantedEmbedder(texts), paths)
    assert hits["accuracy"] == [True] and set(s["accuracy"]) == {"all", "to the left of"}


def write_whatsup(root: Path) -> Path:
    image(root / "data" / "controlled_images" / "mug_left_of_plate.jpeg", RED)
    image(root / "data" / "controlled_images" / "mug_right_of_plate.jpeg", GREEN)
    cases = [{"image_path": "data/controlled_images/mug_left_of_plate.jpeg",
              "caption_options": ["A mug to the left of a plate", "A mug to the right of a plate",
                                  "A mug on a plate", "A mug under a plate"]},
             {"image_path": "data/controlled_images/mug_right_of_plate.jpeg",
              "caption_options": ["A mug to the right of a plate", "A mug to the left of a plate",
                                  "A mug on a plate", "A mug under a plate"]}]
    (root / "controlled_images_dataset.json").write_text(json.dumps(cases))
    return root


def test_whatsup_four_options_true_first(tmp_path):
    root = write_whatsup(tmp_path / "whatsup")
    texts = {"A mug to the left of a plate": V["r"], "A mug to the right of a plate": V["b"],
             "A mug on a plate": V["g"], "A mug under a plate": V["b"]}
    hits, s = score(compo.load_compositional("whatsup", root), PlantedEmbedder(texts))
    assert hits["accuracy"] == [True, False]  # image 2 is green: "on" wins over the true "right of"
    assert s["accuracy"]["all"]["chance"] == 0.25 and s["accuracy"]["controlled A"]["n"] == 2


def test_report_has_count_interval_and_chance_in_every_row(tmp_path):
    split = compo.load_compositional("sugarcrepe", write_sugarcrepe(tmp_path / "sc"))
    _, s = score(split, PlantedEmbedder(SUGAR_TEXTS))
    payload = {"benchmark": "sugarcrepe", "unit": "items", "models": [{"label": "planted", "scores": s}]}
    write_report(tmp_path / "out", "compositional", payload, ["planted"])
    rows = list(csv.DictReader((tmp_path / "out" / "compositional.csv").open()))
    assert len(rows) == 3 and all(r["n"] and r["95% CI"] and r["chance"] == "50.0" for r in rows)
    md = (tmp_path / "out" / "compositional.md").read_text()
    assert "4 items: too few to read" in md and "chance" in md
    page = (tmp_path / "out" / "compositional.html").read_text()  # the page, as the probe page is made
    assert page.startswith("<!doctype html>") and "<th>95% CI</th>" in page and "<th>chance</th>" in page
    assert "4 items: too few to read" in page and "<td>50.0</td>" in page


def test_bad_roots_are_user_errors(tmp_path):
    with pytest.raises(UserError, match="unknown compositional benchmark"):
        compo.load_compositional("nope", tmp_path)
    with pytest.raises(UserError, match="missing file"):
        compo.load_compositional("winoground", tmp_path)
    with pytest.raises(UserError, match="nothing to score"):
        compo.load_compositional("sugarcrepe", tmp_path)


def test_broken_entries_and_images_are_counted_or_one_line(tmp_path):
    root = write_aro(tmp_path / "aro")
    cases = json.loads((root / "visual_genome_relation.json").read_text())
    (root / "images" / "bad.jpg").write_bytes(b"not an image")
    cases += [{**cases[0], "image_path": "bad.jpg"}, {**cases[0], "bbox_w": 0}, {**cases[0], "bbox_x": 15}]
    (root / "visual_genome_relation.json").write_text(json.dumps(cases))
    split = compo.load_compositional("aro-vg-relation", root)
    assert len(split.trials) == 1 and split.skipped == {"unreadable_image": 1, "empty_or_outside_box": 2}
    del cases[0]["true_caption"]
    (root / "visual_genome_relation.json").write_text(json.dumps(cases))
    with pytest.raises(UserError, match="lacks a field"):
        compo.load_compositional("aro-vg-relation", root)


# ---------------------------------------------------------------- zero-shot

def test_topk_counts_ties_against_the_true_class():
    logits = np.array([[0.9, 0.1, 0.2], [0.5, 0.5, 0.1], [0.1, 0.3, 0.2]])
    hits = zs.topk_hits(logits, np.array([0, 0, 0]), ks=(1, 2, 3))
    assert hits[1].tolist() == [True, False, False]
    assert hits[2].tolist() == [True, True, False]
    assert hits[3].tolist() == [True, True, True]


def write_folder(root: Path) -> Path:
    for cls, colours in {"n01_red_thing": [RED, RED], "n02_green_thing": [GREEN, BLUE], "n03_blue": [BLUE]}.items():
        for i, c in enumerate(colours):
            image(root / cls / f"{i}.png", c)
    (root / "n03_blue" / "readme.txt").write_text("not an image")
    (root / "n03_blue" / "broken.jpg").write_bytes(b"not a jpeg")
    return root


def test_zeroshot_folder_templates_and_planted_scores(tmp_path):
    root = write_folder(tmp_path / "imgs")
    names = tmp_path / "classnames.txt"
    names.write_text("red thing\ngreen thing\nblue thing\n")
    tmpl = tmp_path / "templates.txt"
    tmpl.write_text("a photo of a {}.\na {}.\n")
    split = zs.load_folder(root, names)
    assert split.classes == ["red thing", "green thing", "blue thing"] and len(split.images) == 5
    assert split.unreadable == 1
    label, makers = zs.templates(str(tmpl))
    # Each class's prompts average to its colour (the two templates planted symmetric about it).
    planted = {}
    for c, v in zip(split.classes, (V["r"], V["g"], V["b"])):
        planted[f"a photo of a {c}."] = v + 0.1 * np.roll(v, 1)
        planted[f"a {c}."] = v - 0.1 * np.roll(v, 1)
    result = zs.evaluate_zeroshot(PlantedEmbedder(planted), split, makers, n_boot=200)
    # the blue image in the green folder is a miss at top-1, and at top-2 it would be a hit
    assert result["top1"]["acc"] == pytest.approx(4 / 5) and result["top1"]["chance"] == pytest.approx(1 / 3)
    assert result["top5"]["acc"] == 1.0 and result["top5"]["chance"] == 1.0 and result["top1"]["n"] == 5


def test_zeroshot_open_clip_templates_by_name_and_bad_inputs(tmp_path):
    from open_clip.zero_shot_metadata import OPENAI_IMAGENET_TEMPLATES, SIMPLE_IMAGENET_TEMPLATES

    assert len(zs.templates("openai")[1]) == len(OPENAI_IMAGENET_TEMPLATES) == 80
    assert zs.templates("simple")[1][0]("cat") == SIMPLE_IMAGENET_TEMPLATES[0]("cat")
    assert zs.load_folder(write_folder(tmp_path / "f")).classes[0] == "n01 red thing"
    bad = tmp_path / "bad.txt"
    bad.write_text("no placeholder\n")
    for call, match in ((lambda: zs.templates(str(bad)), "needs a"), (lambda: zs.templates("imagenet"), "give openai"),
                        (lambda: zs.load_folder(tmp_path / "f", bad), "1 names for 3")):
        with pytest.raises(UserError, match=match):
            call()


# ---------------------------------------------------------------- the commands, with a tiny random model

MODEL = ["--model", "ViT-S-32", "--pretrained", "none", "--device", "cpu", "--quiet", "--no-cache"]


def invoke(*args):
    from comco.cli.eval import app

    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.mark.torch
def test_commands_end_to_end_with_a_random_model(tmp_path):
    out = tmp_path / "wg"
    result = invoke("compositional", "--benchmark", "winoground", "--root", write_winoground(tmp_path / "w"),
                    *MODEL, "--out", out)
    assert result.exit_code == 0, result.output
    payload = json.loads((out / "results.json").read_text())
    assert set(payload["models"][0]["scores"]) == {"text", "image", "group"}
    assert "| chance |" in (out / "compositional.md").read_text()
    out = tmp_path / "zs"
    result = invoke("zeroshot", "--root", write_folder(tmp_path / "f"), "--prompts", "simple", *MODEL, "--out", out)
    assert result.exit_code == 0, result.output
    top1 = json.loads((out / "results.json").read_text())["models"][0]["scores"]["top1"]["all"]
    assert top1["n"] == 5 and top1["chance"] == pytest.approx(1 / 3)


@pytest.mark.torch
@pytest.mark.parametrize("name, write, n", [("sugarcrepe", write_sugarcrepe, 4), ("aro-vg-relation", write_aro, 1),
                                            ("whatsup", write_whatsup, 2)])
def test_selection_benchmarks_through_the_command(tmp_path, name, write, n):
    out = tmp_path / "out"
    result = invoke("compositional", "--benchmark", name, "--root", write(tmp_path / "root"), *MODEL, "--out", out)
    assert result.exit_code == 0, result.output
    payload = json.loads((out / "results.json").read_text())
    assert payload["items"] == n and payload["models"][0]["scores"]["accuracy"]["all"]["n"] == n


def test_commands_bad_input_exit_2_with_one_line(tmp_path):
    result = invoke("compositional", "--benchmark", "nope", "--root", tmp_path, "--model", "ViT-S-32",
                    "--pretrained", "none", "--out", tmp_path / "o", "--quiet", "--no-cache", "--device", "cpu")
    assert result.exit_code == 2 and "unknown compositional benchmark" in result.output


def test_zeroshot_imagenet_classnames_by_name(tmp_path):
    from open_clip.zero_shot_metadata import IMAGENET_CLASSNAMES

    root = tmp_path / "val"
    for k in range(1000):
        (root / f"n{k:08d}").mkdir(parents=True)
    image(root / "n00000000" / "a.png", RED)
    split = zs.load_folder(root, Path("imagenet"))
    assert split.classes == list(IMAGENET_CLASSNAMES) and split.classes[0] == "tench"
    with pytest.raises(UserError, match="1000 names for 3 class folders"):
        zs.load_folder(write_folder(tmp_path / "f"), Path("imagenet"))
