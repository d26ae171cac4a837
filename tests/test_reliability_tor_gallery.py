"""Issue 16 item 17: TOR's gallery is the bare object names by default (the ComCO scripts'
protocol), the query's template only when asked, and every TOR group names which."""

from pathlib import Path

import numpy as np
import pytest

from comco.errors import UserError
from comco.manifest import load_object_set
from comco.plan import PlanConfig, Planner
from comco.probes import texts
from comco.probes.probe_data import ProbeData
from comco.probes.tor import tor_dataset, tor_text_only

SET = load_object_set("simco")


class Recording:
    """Embeds each text as the one-hot of the first object it names; remembers every text."""

    def __init__(self):
        self.seen: list[str] = []

    def texts(self, items):
        from comco.probes.words import mention_sequence

        self.seen += list(items)
        out = np.zeros((len(items), len(SET.names)), dtype=np.float32)
        for row, t in enumerate(items):
            found = mention_sequence(t, SET.names)
            for k, name in enumerate(found):
                out[row, SET.names.index(name)] += 0.5 ** k
        return out


def _data() -> ProbeData:
    planner = Planner(PlanConfig(object_set="simco", objects=(3,), n=6, resolution=(64, 64), seed=1), SET)
    return ProbeData(root=Path("/nonexistent"), info={"object_set": "simco"}, records=list(planner.records()),
                     singles=[], names=list(SET.names), object_set=SET, image_path=lambda r: Path(r["image"]))


def test_the_default_gallery_is_the_bare_names():
    emb = Recording()
    groups = tor_dataset(_data(), emb, ["photo"], n_boot=0, seed=0)
    # the gallery is embedded once, before the queries: exactly the names, nothing else
    assert emb.seen[:len(SET.names)] == list(SET.names)
    assert all(g["tor_gallery"] == "names" and "bare-name gallery" in g["key"] for g in groups)
    assert groups[0]["metrics"]["conditional"][0]["acc"] == 1.0  # the first-mention fake still wins 1st


def test_the_template_gallery_is_an_option_and_is_named():
    emb = Recording()
    groups = tor_dataset(_data(), emb, ["photo"], n_boot=0, seed=0, gallery="template")
    book = texts.template_book()
    expected = [texts.write(book.templates["photo"], [n], SET) for n in SET.names]
    assert emb.seen[:len(SET.names)] == expected and expected[0] != SET.names[0]
    assert all(g["tor_gallery"] == "template" and "template gallery" in g["key"] for g in groups)


def test_text_only_names_its_gallery_too():
    book = texts.template_book()
    for gallery, word in (("names", "bare-name gallery"), ("template", "template gallery")):
        emb = Recording()
        groups = tor_text_only(SET.names, SET, emb, book.templates["photo"], [2], tuples=10, n_boot=0, seed=0,
                               gallery=gallery)
        assert word in groups[0]["key"] and groups[0]["tor_gallery"] == gallery
        assert (emb.seen[0] == SET.names[0]) == (gallery == "names")


def test_an_unknown_gallery_is_a_user_error():
    with pytest.raises(UserError, match="--tor-gallery"):
        tor_dataset(_data(), Recording(), ["photo"], n_boot=0, seed=0, gallery="words")
