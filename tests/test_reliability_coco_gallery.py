"""Issue 16 item 18: text-only TOR over ComCO's COCO gallery (90 names, the COCO 2014 category
ids 1..90 incl. the ten never annotated), besides the paper's full 91 and the 80 classes."""

import numpy as np
import pytest

from comco.errors import UserError
from comco.manifest import load_object_set
from comco.probes import texts
from comco.probes.texts import NAME_LISTS, name_list
from comco.probes.tor import tor_text_only


def test_the_lists():
    assert [len(NAME_LISTS[k]) for k in ("coco80", "coco90", "coco91")] == [80, 90, 91]
    assert len(set(NAME_LISTS["coco91"])) == 91
    assert NAME_LISTS["coco91"][-1] == "hair brush" and "hair brush" not in NAME_LISTS["coco90"]
    for name in ("street sign", "hat", "shoe", "eye glasses", "plate", "mirror", "window", "desk", "door",
                 "blender"):
        assert name in NAME_LISTS["coco90"] and name not in NAME_LISTS["coco80"]


def test_ids_agree_with_torchvision_s_coco_categories():
    weights = pytest.importorskip("torchvision.models.detection").FasterRCNN_ResNet50_FPN_Weights
    tv = weights.DEFAULT.meta["categories"][1:]  # ids 1..90, "N/A" where 2014 has no annotations
    assert len(tv) == 90
    assert [n for n in tv if n != "N/A"] == list(NAME_LISTS["coco80"])
    assert all(t in ("N/A", c) for t, c in zip(tv, NAME_LISTS["coco90"]))


class Names:
    """Random embeddings; remembers the texts it was given."""

    def __init__(self, names):
        self.seen, self.rng = [], np.random.default_rng(0)

    def texts(self, items):
        self.seen += list(items)
        return self.rng.standard_normal((len(items), 8)).astype(np.float32)


def test_text_only_tor_over_coco90():
    names = name_list("coco90")
    emb = Names(names)
    book = texts.template_book()
    (g,) = tor_text_only(names, load_object_set("comco"), emb, book.templates["photo"], [2], tuples=90, n_boot=0,
                         seed=0, names_label="coco90")
    assert emb.seen[:90] == names  # the gallery: the 90 bare names
    assert g["gallery"] == 90 and "coco90" in g["key"] and g["queries"] == 90
    assert any("eye glasses" in t for t in emb.seen[90:])  # tuples draw from the whole list


def test_unknown_list_is_a_user_error():
    with pytest.raises(UserError, match="coco90"):
        name_list("coco9")
