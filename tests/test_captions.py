"""Captions: articles from the manifest, template shapes, long captions."""

import re

import pytest

from comco.errors import UserError
from comco.manifest import load_object_set
from comco.plan import PlanConfig, Planner
from comco.plan.captions import load_templates, resolve_articles, size_word, split_sentences


@pytest.mark.parametrize("set_name", ["comco", "simco"])
def test_article_for_every_name(set_name):
    oset = load_object_set(set_name)
    for o in oset.objects:
        expected = "an" if o.name[0] in "aeiou" else "a"
        assert o.article == expected, o.name
        assert resolve_articles("{a} " + o.name, oset) == f"{expected} {o.name}"
    assert len(oset.objects) == {"comco": 72, "simco": 18}[set_name]


def test_colour_articles_agree_with_the_colour():
    oset = load_object_set("comco")
    assert resolve_articles("{a} orange cube and {a} red cube", oset) == "an orange cube and a red cube"


def test_templates_write_the_documented_shapes():
    oset = load_object_set("comco")
    planner = Planner(PlanConfig(n=3, objects=(3,), colors=True), oset)
    rec = planner.plan(0)
    names = [o["name"] for o in rec["objects"]]
    for order, cap in zip(rec["mention_orders"], rec["captions"]["and"]):
        assert cap == " and ".join(names[i] for i in order)
    for order, cap in zip(rec["mention_orders"], rec["captions"]["articles"]):
        assert cap == " and ".join(f"{oset.get(names[i]).article} {names[i]}" for i in order)
    for cap in rec["captions"]["photo"]:
        assert cap.startswith("a photo of ") and ", " in cap and " and " in cap
    for order, cap, swapped in zip(rec["mention_orders"], rec["captions"]["attributes"],
                                   rec["captions"]["attributes_swapped"]):
        c = [rec["objects"][i]["color"] for i in order]
        assert f"{c[0]} {names[order[0]]}" in cap
        assert f"{c[1]} {names[order[0]]}" in swapped and f"{c[0]} {names[order[1]]}" in swapped


def test_long_captions_start_with_the_summary_and_have_a_sentence_per_object():
    oset = load_object_set("comco")
    planner = Planner(PlanConfig(n=40, objects=(2, 3, 4, 5)), oset)
    for rec in planner.records():
        n = len(rec["objects"])
        for order, cap in zip(rec["mention_orders"], rec["captions"]["long"]):
            sentences = split_sentences(cap)
            assert len(sentences) == n + 1
            summary = sentences[0]
            assert summary.startswith("A photo of")
            positions = [re.search(rf"\b{rec['objects'][i]['name']}\b", summary).start() for i in order]
            assert positions == sorted(positions)  # the summary names objects in mention order
            for s, i in zip(sentences[1:], order):
                assert re.search(rf"\b{rec['objects'][i]['name']}\b", s)


def test_long_caption_size_words_follow_ranks():
    oset = load_object_set("simco")
    rec = Planner(PlanConfig(n=1, objects=(3,)), oset).plan(0)
    large = next(o for o in rec["objects"] if o["size_rank"] == 0)["name"]
    first = rec["captions"]["long"][0]
    sentence = next(s for s in split_sentences(first)[1:] if large in s)
    assert "large" in sentence and "small" not in sentence


def test_size_word_spread():
    words = ["very large", "large", "medium-sized", "small", "tiny"]
    assert [size_word(words, r, 5) for r in range(5)] == words
    assert [size_word(["large", "small"], r, 4) for r in range(4)] == ["large", "small", "small", "small"]


def test_user_templates_add_and_unknown_keys_fail(tmp_path):
    f = tmp_path / "t.toml"
    f.write_text('[with]\nobject = "{a} {name}"\njoin = " with "\ncaption = "{objects} on the floor"\n')
    book = load_templates(f)
    assert "with" in book.templates and "and" in book.templates
    f.write_text('[bad]\nobject = "{name}"\njoin = " "\ncaption = "{objects}"\ncolour = 1\n')
    with pytest.raises(UserError, match="unknown key 'colour'"):
        load_templates(f)


def _plain_captions(rec, planner, variants):
    """Captions written straight from the template functions, without the memo or the fast joins."""
    from comco.plan import captions as cap

    n = len(rec["objects"])
    fields = [cap.object_fields(o, planner.book, rec["layout"], n) for o in rec["objects"]]
    out = {}
    for t in planner.templates:
        texts = []
        for order in rec["mention_orders"]:
            text = cap.join_caption(t, [cap.object_phrase(t, fields[i], planner.set) for i in order])
            if t.kind == "long":
                text = " ".join([text] + [cap.object_sentence(t, fields[i], variants[i], planner.set) for i in order])
            texts.append(text)
        out[t.name] = texts
    return out


@pytest.mark.parametrize("colors", [False, True])
def test_memoised_captions_equal_the_plain_template_functions(tmp_path, colors):
    # An untidy user template (double spaces, a leading space, a tab) takes the slow path.
    odd = tmp_path / "odd.toml"
    odd.write_text('[odd]\nobject = " {a}  {name}"\njoin = "  +\\t"\ncaption = " look: {objects} "\n', encoding="utf-8")
    planner = Planner(
        PlanConfig(n=60, objects=(1, 2, 3, 5), colors=colors, templates=str(odd)), load_object_set("comco")
    )
    for rec in planner.records():
        variants = [7, 8, 9, 10, 11]
        got = planner.captioner.for_record(rec, variants)
        want = _plain_captions(rec, planner, variants)
        for name, texts in want.items():
            assert got[name] == texts, name
    assert got["odd"][0].startswith("look: ")
