"""--text-aggregate per-object (ComCO's mitigation): phrases as said, a planted first-mention
encoder whose first-mention share vanishes under aggregation, the page with and without it,
and the refusals."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from support.probes import SET, FakeEmbedder, planned_data, random_vec

from comco.errors import UserError
from comco.models.ref import ModelRef
from comco.probes import texts
from comco.probes.aggregate import PerObjectTexts, check_aggregate, modifier_words, object_phrases
from comco.probes.tor import tor_dataset, tor_text_only
from comco.probes.words import mention_sequence

COMCO = [sys.executable, "-m", "comco.cli"]
NAMES = list(SET.names)
FORMS = {o.name: [o.plural, *o.synonyms] for o in SET.objects}
BOOK = texts.template_book(None)
WORDS = modifier_words(SET, BOOK)


def test_a_caption_splits_into_its_objects_phrases():
    cases = {
        "a photo of a red cube, two spheres and the very large cone.": ["a red cube", "two spheres",
                                                                        "the very large cone"],
        "cube and sphere and cone": ["cube", "sphere", "cone"],
        "The cube is behind the sphere": ["The cube", "the sphere"],  # the relation is not in any phrase
        "A photo of an arrow and a mug on a grey floor. The arrow is small and stands at the top left.":
            ["an arrow", "a mug"],  # first mentions only
        "a photo of a car": [],  # no object of the set: embedded whole
    }
    for text, phrases in cases.items():
        assert object_phrases(text, NAMES, FORMS, WORDS) == phrases, text


def _first_mention_encoder():
    """A caption leans to its first-named object (weight 1, the others 0.3: a first-mention bias);
    a one-object phrase is its object's vector with a little phrase-keyed noise, so ties are broken at random."""
    def text(t):
        seq = mention_sequence(t, NAMES, FORMS)
        v = np.zeros(len(NAMES) + 64)
        for k, name in enumerate(seq):
            v[NAMES.index(name)] = 1 if k == 0 else 0.3
        if len(seq) == 1:
            v[len(NAMES):] = 0.05 * random_vec(t)
        return v / np.linalg.norm(v)
    return FakeEmbedder(text)


def test_the_first_mention_share_vanishes_under_aggregation():
    plain = _first_mention_encoder()
    per_object = PerObjectTexts(plain, NAMES, FORMS, WORDS)
    tpl = texts.get_template(BOOK, "photo")
    kw = {"tuples": 360, "n_boot": 100, "seed": 0}
    for n, biased, mean in [(g0["n_objects"], g0, g1) for g0, g1 in zip(
            tor_text_only(NAMES, SET, plain, tpl, [2, 3, 4], **kw),
            tor_text_only(NAMES, SET, per_object, tpl, [2, 3, 4], **kw))]:
        first = biased["metrics"]["conditional"][0]
        assert first["role"] == "1st" and first["acc"] == 1.0
        shares = [s["acc"] for s in mean["metrics"]["conditional"]]
        assert mean["kept_conditional"] > 300  # the mean sits equally near each of its objects: top-n is the set
        assert abs(shares[0] - 1 / n) < 0.08 and max(abs(s - 1 / n) for s in shares) < 0.1, (n, shares)
        first = mean["metrics"]["conditional"][0]
        assert first["lo"] < 1 / n < first["hi"] or abs(first["acc"] - 1 / n) < 0.03


def test_aggregation_on_a_dataset_and_the_embedder_it_wraps():
    data = planned_data(n=40, objects=(3,))
    plain = _first_mention_encoder()
    per_object = PerObjectTexts(plain, NAMES, FORMS, WORDS)
    (g0,) = tor_dataset(data, plain, ["and"], n_boot=0, seed=0)
    (g1,) = tor_dataset(data, per_object, ["and"], n_boot=0, seed=0)
    assert g0["metrics"]["unconditional"][0]["acc"] == 1.0
    assert g1["metrics"]["unconditional"][0]["acc"] < 0.6
    # the mean is taken over the phrases' own embeddings, and normalised
    emb = per_object.texts(["cube and sphere", "sphere and cube", "star"])
    want = plain.texts(["cube"])[0] + plain.texts(["sphere"])[0]
    assert np.allclose(emb[0], want / np.linalg.norm(want), atol=1e-6) and np.allclose(emb[0], emb[1])
    assert np.allclose(emb[2], plain.texts(["star"])[0])


def test_a_model_that_cannot_embed_phrases_is_refused():
    check_aggregate(None, [ModelRef("vlm:/x")])
    check_aggregate("per-object", [ModelRef("ViT-B-32", "openai"), ModelRef("st:/x")])
    with pytest.raises(UserError, match="gives no text embedding"):
        check_aggregate("per-object", [ModelRef("ViT-B-32"), ModelRef("vlm:/x")])
    with pytest.raises(UserError, match="use per-object"):
        check_aggregate("mean", [ModelRef("ViT-B-32")])


@pytest.mark.torch
def test_the_page_shows_each_bias_with_and_without_it_and_refusals_write_nothing(tmp_path):
    out = tmp_path / "out"
    base = [*COMCO, "probe", "--text-only", "--object-set", "simco", "--model", "ViT-S-32", "--pretrained", "none",
            "--tuples", "18", "--objects", "2-3", "--bootstrap", "20", "--no-cache", "--no-plots", "--quiet"]
    r = subprocess.run([*base, "--text-aggregate", "per-object", "--out", out], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads((out / "results.json").read_text())
    assert set(res["probes"]) == {"tor", "tor-per-object"} and res["options"]["text_aggregate"] == "per-object"
    page = (out / "report.md").read_text()
    assert "| first-mention bias |" in page and "| first-mention bias, per-object texts |" in page
    assert "per-object texts, mean of phrase embeddings" in page and (out / "tor-per-object.csv").is_file()
    for extra, says in ((["--text-aggregate", "per-object", "--model", "vlm:/nowhere"], "gives no text embedding"),
                        (["--text-aggregate", "whole"], "--text-aggregate whole: use per-object")):
        r = subprocess.run([*base, *extra, "--out", tmp_path / "no"], capture_output=True, text=True)
        assert r.returncode == 2 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert not (tmp_path / "no").exists()
