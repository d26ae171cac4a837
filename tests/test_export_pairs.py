"""The pair benchmarks' exports, each read back the way its authors' loader reads it.

The reading lines below re-implement (not copy) the loaders' parsing, file by file:
- Winoground: the Hugging Face script facebook/winoground `winoground.py`, `_generate_examples`
  (json.loads per line; image paths = images_dir/"images"/image_N + ".png"; features id int32,
  image_0/1, caption_0/1, tag, secondary_tag, num_main_preds int32, collapsed_tag).
- SugarCrepe: RAIVNLab/sugar-crepe `main_eval.py`, `evaluate` (json.load of a category file;
  for each value: coco_image_root/filename, caption, negative_caption).
- VL-CheckList: om-ai-lab/VL-CheckList `vl_checklist/data_loader.py`, `load_itc_samples`
  (yaml at cur_dir/corpus/v1/TYPE/NAME.yaml with ANNO_PATH and IMG_ROOT; json list of
  [path, {"POS", "NEG"}]; IMG_ROOT joined with path must exist).
- SPEC: wjpoom/SPEC `spec/dataset.py`, Image2TextDataset / Text2ImageDataset (subset_root/
  image2text.json and text2image.json lists of {"query", "keys", "label"}; images under subset_root).
"""

from __future__ import annotations

import json
import os

import pytest
from PIL import Image
from support.export import comco
from support.pairs import planned_pair_dataset
from support.probes import make_dataset

from comco.data.folder import SCENES
from comco.data.pairing import ONE_WAY
from comco.io import read_jsonl


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    return planned_pair_dataset(tmp_path_factory.mktemp("export-pairs") / "ds", n=4)


def records(root) -> dict[str, dict]:
    return {r["id"]: r for r in read_jsonl(root / SCENES)}


def export(capsys, ds, to, out, *extra):
    code, stdout, err = comco(capsys, "export", ds, "--to", to, "--out", out, *extra)
    assert code == 0, err
    return json.loads((out / "comco-export.json").read_text())


FACTOR_TEMPLATE = {"swap-size": "sizes", "swap-slots": "relations", "remove": "and"}


def caption_pairs(recs, factor=None) -> set[tuple[str, str, str, str]]:
    """(base id, variant id, base caption, variant caption) of every differing caption order."""
    out = set()
    for r in recs.values():
        p = r.get("pair")
        if not p or p["factor"] == "base" or (factor and p["factor"] != factor):
            continue
        base, t = recs[p["id"]], FACTOR_TEMPLATE[p["factor"]]
        for a, b in zip(base["captions"][t], r["captions"][t]):
            if a != b:
                out.add((base["id"], r["id"], a, b))
    return out


def test_winoground_items_load_as_its_script_reads_them(pairs, tmp_path, capsys):
    out = tmp_path / "wg"
    summary = export(capsys, pairs, "winoground", out)
    recs = records(pairs)
    # winoground.py _generate_examples: one JSON per line, images_dir/images/NAME.png
    examples = [json.loads(line) for line in open(out / "examples.jsonl").readlines()]
    features = {"id", "image_0", "image_1", "caption_0", "caption_1", "tag", "secondary_tag", "num_main_preds",
                "collapsed_tag"}
    got = set()
    for ex in examples:
        assert set(ex) == features and isinstance(ex["id"], int) and isinstance(ex["num_main_preds"], int)
        paths = [os.path.join(out, "images", ex[f"image_{i}"] + ".png") for i in (0, 1)]
        for p, rid in zip(paths, (ex["image_0"], ex["image_1"])):
            assert open(p, "rb").read() == (pairs / recs[rid]["image"]).read_bytes()
            Image.open(p).verify()
        got.add((ex["image_0"], ex["image_1"], ex["caption_0"], ex["caption_1"]))
        assert recs[ex["image_1"]]["pair"]["factor"] == ex["tag"]
    one_way = {c for c in caption_pairs(recs) if recs[c[1]]["pair"]["factor"] in ONE_WAY}
    assert one_way and got == caption_pairs(recs) - one_way and len(examples) == len(got)  # remove / add left out
    assert summary["left_out"]["one_way"] == len(one_way)
    assert sorted(e["id"] for e in examples) == list(range(len(examples)))
    side = [json.loads(line) for line in open(out / "comco-pairs.jsonl")]
    assert [s["variant"] for s in side] == [e["image_1"] for e in examples]
    assert summary["items"] == len(examples) and summary["template"] == "each factor's"


def test_captions_first_keeps_one_item_per_pair(pairs, tmp_path, capsys):
    out = tmp_path / "wg1"
    export(capsys, pairs, "winoground", out, "--mention-orders", "first")
    examples = [json.loads(line) for line in open(out / "examples.jsonl")]
    variants = [e["image_1"] for e in examples]
    recs = records(pairs)
    assert len(variants) == len(set(variants)) == len({v for (_, v, _, _) in caption_pairs(recs)
                                                       if recs[v]["pair"]["factor"] not in ONE_WAY})


def test_sugarcrepe_files_load_as_main_eval_reads_them(pairs, tmp_path, capsys):
    out = tmp_path / "sc"
    summary = export(capsys, pairs, "sugarcrepe", out)
    recs = records(pairs)
    assert set(summary["items"]) == {"swap-size", "swap-slots", "remove"}
    for factor in summary["items"]:
        # main_eval.py: dataset[c] = json.load(open(path)); for i, data in data_dict.items(): ...
        data_dict = json.load(open(out / f"{factor.replace('-', '_')}.json", "r", encoding="utf-8"))
        assert list(data_dict) == [str(i) for i in range(len(data_dict))]
        seen = set()
        for _, data in data_dict.items():
            image_path = os.path.join(out / "images", data["filename"])
            Image.open(image_path).verify()
            rid = data["filename"].rsplit(".", 1)[0]
            assert data["caption"] != data["negative_caption"]
            assert open(image_path, "rb").read() == (pairs / recs[rid]["image"]).read_bytes()
            seen.add((rid, data["caption"], data["negative_caption"]))
        want = set()
        for base, var, a, b in caption_pairs(recs, factor):
            if factor != "remove":
                want.add((base, a, b))  # the base image: its caption against the variant's
            want.add((var, b, a))  # remove: only the variant image, whose negative names the removed object
        assert seen == want, factor


def test_vl_checklist_tuples_load_as_its_data_loader_reads_them(pairs, tmp_path, capsys):
    import yaml  # here, not at module level: importing it earlier shifts test_export.py's memory peak (gc timing)

    out = tmp_path / "vl"
    summary = export(capsys, pairs, "vl-checklist", out)
    recs = records(pairs)
    types = list(summary["items"])
    assert {"Object/Location/center", "Object/Location/margin", "Object/Size/large", "Object/Size/small",
            "Attribute/size", "Relation/spatial"} <= set(types)
    cwd = os.getcwd()
    os.chdir(out)  # VL-CheckList resolves ANNO_PATH and IMG_ROOT from the working directory
    try:
        for type_ in types:
            # data_loader.load_itc_samples
            config = yaml.load(open(os.path.join(os.path.realpath(os.curdir), "corpus", "v1", type_, "comco.yaml")),
                               Loader=yaml.FullLoader)
            assert config["TYPE"] == "TUPLE_JSON"
            m = json.load(open(os.path.join(os.path.realpath(os.curdir), config["ANNO_PATH"])))
            assert m
            for x in m:
                path, texts_dict = x
                path = os.path.join(config["IMG_ROOT"], path)
                assert os.path.exists(path), path
                pos, neg = texts_dict["POS"][0], texts_dict["NEG"][0]
                rec = recs[os.path.basename(path).rsplit(".", 1)[0]]
                if type_.startswith("Object/"):
                    assert rec["pair"]["factor"] == "base"
                    names = [o["name"] for o in rec["objects"]]
                    assert pos == rec["captions"]["and"][0]  # the `and` caption, mention order 0
                    # NEG: exactly one name of the image replaced by one the image lacks
                    p_words, n_words = pos.split(" and "), neg.split(" and ")
                    diff = [(a, b) for a, b in zip(p_words, n_words) if a != b]
                    assert len(diff) == 1 and diff[0][0] in names and diff[0][1] not in names
                    obj = rec["objects"][names.index(diff[0][0])]
                    if type_ == "Object/Location/center":
                        assert obj["slot"] == "M"
                    if type_ == "Object/Location/margin":
                        assert obj["slot"] != "M"
                    if type_ == "Object/Size/large":
                        assert obj["size_rank"] == 0
                    if type_ == "Object/Size/small":
                        assert obj["size_rank"] > 0
                else:
                    factor = {"Attribute/size": "swap-size", "Relation/spatial": "swap-slots"}[type_]
                    assert pos in rec["captions"][FACTOR_TEMPLATE[factor]] and pos != neg
    finally:
        os.chdir(cwd)
    bases = [r for r in recs.values() if r["pair"]["factor"] == "base"]
    assert summary["items"]["Object/Location/center"] + summary["items"]["Object/Location/margin"] == \
        sum(len(r["objects"]) for r in bases)


def test_spec_candidate_sets_load_as_its_datasets_read_them(pairs, tmp_path, capsys):
    out = tmp_path / "spec"
    summary = export(capsys, pairs, "spec", out)
    recs = records(pairs)
    for subset in summary["items"]:
        subset_root = os.path.join(out, subset)
        # Image2TextDataset
        with open(os.path.join(subset_root, "image2text.json"), "r") as f:
            i2t = json.load(f)
        # Text2ImageDataset
        with open(os.path.join(subset_root, "text2image.json"), "r") as f:
            t2i = json.load(f)
        per_pair = 1 if subset in ONE_WAY else 2  # remove / add: only the direction whose negative is false
        assert len(i2t) == len(t2i) == per_pair * summary["items"][subset]
        assert {len(s["keys"]) for s in i2t} == {len(s["keys"]) for s in t2i} == {2}  # one size: SPEC stacks them
        for s in i2t:
            image_path = os.path.join(subset_root, s["query"])
            Image.open(image_path).convert("RGB")
            rec = recs[os.path.basename(image_path).rsplit(".", 1)[0]]
            right = s["keys"][s["label"]]
            assert right in rec["captions"][FACTOR_TEMPLATE[subset]]
            assert s["keys"][1 - s["label"]] not in rec["captions"][FACTOR_TEMPLATE[subset]]
        for s in t2i:
            for img in s["keys"]:
                Image.open(os.path.join(subset_root, img)).convert("RGB")
            rec = recs[os.path.basename(s["keys"][s["label"]]).rsplit(".", 1)[0]]
            assert s["query"] in rec["captions"][FACTOR_TEMPLATE[subset]]


@pytest.mark.parametrize("to", ["winoground", "sugarcrepe", "spec"])
def test_a_dataset_without_pairs_is_one_line(tmp_path, capsys, to):
    ds = make_dataset(tmp_path / "plain", n=2, objects=(2,), resolution=32, singles=False)
    code, out, err = comco(capsys, "export", ds, "--to", to, "--out", tmp_path / "out")
    assert code == 2
    lines = (out + err).strip().splitlines()
    assert len(lines) == 1 and "no pair records" in lines[0] and "--pairs" in lines[0]
    assert not (tmp_path / "out").exists()


def test_vl_checklist_takes_a_plain_dataset_for_its_object_tuples(tmp_path, capsys):
    ds = make_dataset(tmp_path / "plain", n=3, objects=(3,), resolution=32, singles=False)
    summary = export(capsys, ds, "vl-checklist", tmp_path / "out")
    assert set(summary["items"]) <= {"Object/Location/center", "Object/Location/margin", "Object/Size/large",
                                     "Object/Size/small"}
    assert sum(v for k, v in summary["items"].items() if k.startswith("Object/Location")) == 9
