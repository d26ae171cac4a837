"""Each natural benchmark loads from a fixture in its distributed layout with the right counts."""

from __future__ import annotations

import json

import pytest
from support.natural import (
    LONG_CAPTIONS,
    write_coco,
    write_coco_karpathy,
    write_dci,
    write_docci,
    write_flickr,
    write_image,
    write_long_dci,
    write_sharegpt4v,
    write_urban1k,
)

from comco.errors import UserError
from comco.probes.natural.benchmarks import BENCHMARKS, load_benchmark
from comco.probes.natural.sharegpt4v import load_sharegpt4v


def test_coco_val2017_sorted_by_id_with_all_captions(tmp_path):
    split = load_benchmark("coco", write_coco(tmp_path))
    assert split.n_images == 3 and split.n_captions == 16
    assert [item.image.name for item in split.items] == ["000000000007.jpg", "000000000042.jpg", "000000000139.jpg"]
    assert split.items[1].captions == tuple(f"image 42 caption {j}" for j in range(6))


def test_coco_karpathy_keeps_only_the_test_split(tmp_path):
    split = load_benchmark("coco-karpathy", write_coco_karpathy(tmp_path))
    assert [item.image.name for item in split.items] == ["COCO_val2014_000000000000.jpg",
                                                         "COCO_val2014_000000000002.jpg"]
    assert split.n_captions == 11 and split.items[0].image.parent.name == "val2014"


def test_flickr30k_full_orders_captions_by_number(tmp_path):
    split = load_benchmark("flickr30k", write_flickr(tmp_path))
    assert split.n_images == 4 and split.n_captions == 20
    assert split.items[0].captions == tuple(f"1000092795.jpg caption {j} ." for j in range(5))


def test_flickr30k_karpathy_test(tmp_path):
    split = load_benchmark("flickr30k-karpathy", write_flickr(tmp_path))
    assert [item.image.name for item in split.items] == ["1000092795.jpg", "1000092797.jpg"]
    assert split.items[0].image.parent.name == "flickr30k-images"


def test_urban1k_first_line_of_each_caption_file(tmp_path):
    split = load_benchmark("urban1k", write_urban1k(tmp_path))
    assert split.n_images == 3 and split.n_captions == 3
    assert split.items[0].captions == (LONG_CAPTIONS[0],)
    assert split.items[2].image.name == "3.jpg"


def test_docci_test_split_only(tmp_path):
    split = load_benchmark("docci", write_docci(tmp_path))
    assert [item.image.name for item in split.items] == ["test_00001.jpg", "test_00002.jpg", "test_00004.jpg"]


def test_dci_all_splits_short_then_extra_caption(tmp_path):
    split = load_benchmark("dci", write_dci(tmp_path))
    assert split.n_images == 4
    assert split.items[3].captions == ("Short caption 4\n" + LONG_CAPTIONS[0],)


def test_long_dci_reads_quoted_tab_separated_fields(tmp_path):
    split = load_benchmark("long-dci", write_long_dci(tmp_path))
    assert split.n_images == 3
    assert split.items[1].captions == ('He said "hi".\nThen\tleft.',)


def test_sharegpt4v_one_reader_for_evaluation_and_training(tmp_path):
    from comco.train.data import load_training_data

    root = write_sharegpt4v(tmp_path)
    (root / "sam/images/000001.jpg").unlink()
    json_path = root / "share-captioner_coco_lcs_sam_1246k_1107.json"
    split = load_sharegpt4v(json_path, root)
    assert [i.image.name for i in split.items] == ["000000.jpg", "000002.jpg"]
    assert split.items[0].captions[0] == " ".join(LONG_CAPTIONS[0].split())  # line breaks become spaces
    assert split.skipped["missing_image"] == 1
    assert len(load_sharegpt4v(json_path, root, check_images=False).items) == 3
    # the trainer reads the same entries (it meets missing files while decoding, not by 10^6 stats)
    (root / "sam/images/000001.jpg").write_bytes(split.items[0].image.read_bytes())
    data = load_training_data(json_path, templates=[], image_root=root)
    assert [(s.image, s.captions) for s in data.samples] == [
        (i.image, i.captions) for i in load_sharegpt4v(json_path, root).items]


def test_sharegpt4v_entries_without_a_caption_are_counted_for_training(tmp_path):
    import json

    from comco.train.data import load_training_data

    root = write_sharegpt4v(tmp_path)
    json_path = root / "share-captioner_coco_lcs_sam_1246k_1107.json"
    entries = json.loads(json_path.read_text())
    entries[1]["conversations"] = [t for t in entries[1]["conversations"] if t["from"] != "gpt"]
    json_path.write_text(json.dumps(entries))
    data = load_training_data(json_path, templates=[], image_root=root)
    assert len(data.samples) == len(entries) - 1 and "left out: 1 no caption" in data.description


def test_missing_images_are_counted_not_silently_dropped(tmp_path):
    root = write_docci(tmp_path)
    (root / "images" / "test_00002.jpg").unlink()
    split = load_benchmark("docci", root)
    assert split.n_images == 2
    assert split.skipped["missing_image"] == 1
    assert split.summary()["skipped_examples"]["missing_image"][0].endswith("test_00002.jpg")


@pytest.mark.parametrize("name, writer, removed", [
    ("coco", write_coco, "annotations/captions_val2017.json"),
    ("flickr30k", write_flickr, "results_20130124.token"),
    ("docci", write_docci, "docci_descriptions.jsonlines"),
    ("dci", write_dci, "densely_captioned_images/splits.json"),
    ("long-dci", write_long_dci, "dci_long.csv"),
    ("urban1k", write_urban1k, "caption"),
])
def test_missing_file_names_it_and_the_layout(tmp_path, name, writer, removed):
    root = writer(tmp_path)
    target = root / removed
    if target.is_dir():
        for f in target.iterdir():
            f.unlink()
        target.rmdir()
    else:
        target.unlink()
    with pytest.raises(UserError) as err:
        load_benchmark(name, root)
    assert removed.split("/")[-1] in str(err.value)
    assert "expected layout" in str(err.value)


def test_unknown_benchmark_lists_the_known_ones(tmp_path):
    with pytest.raises(UserError) as err:
        load_benchmark("imagenet", tmp_path)
    assert all(name in str(err.value) for name in BENCHMARKS)


def test_analyses_refuse_short_caption_benchmarks(tmp_path):
    with pytest.raises(UserError, match="long-caption"):
        load_benchmark("coco", write_coco(tmp_path), long_only=True)


def test_root_that_is_not_a_folder(tmp_path):
    with pytest.raises(UserError, match="not a folder"):
        load_benchmark("urban1k", tmp_path / "nowhere")


def test_empty_split_is_an_error(tmp_path):
    root = tmp_path
    write_image(root / "images" / "train_0.jpg", 0)
    (root / "docci_descriptions.jsonlines").write_text(json.dumps(
        {"example_id": "train_0", "split": "train", "image_file": "train_0.jpg", "description": "A cat."}) + "\n")
    with pytest.raises(UserError, match="empty"):
        load_benchmark("docci", root)


def test_annotation_without_expected_key_is_named(tmp_path):
    root = write_coco(tmp_path)
    path = root / "annotations" / "captions_val2017.json"
    data = json.loads(path.read_text())
    del data["annotations"][0]["caption"]
    path.write_text(json.dumps(data))
    with pytest.raises(UserError, match="'caption'"):
        load_benchmark("coco", root)
