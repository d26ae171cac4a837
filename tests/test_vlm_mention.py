"""The mention probe's parser and tables against known answers (no model): plurals, synonyms,
repeated names, names inside other words, an empty answer; the prompts file's checks."""

from __future__ import annotations

import pytest

from comco.errors import UserError
from comco.manifest import load_object_set
from comco.probes.mention import POOLED_SMALL, load_prompts, mention_forms, mention_tables, parse_answer

SIMCO = load_object_set("simco")
NAMES = list(SIMCO.names)
FORMS = mention_forms(NAMES, {o.name: [o.plural, *o.synonyms] for o in SIMCO.objects})


@pytest.mark.parametrize("answer, named", [
    ("Two cubes, a ball and a cup.", ["cube", "sphere", "mug"]),  # plural, synonyms
    ("A cube, another cube, then a cone and one more cube", ["cube", "cone"]),  # repeated: first mention counts
    ("A capital letter, a torso and some conesque shapes", []),  # cap, torus, cone inside other words
    ("", []),  # an empty answer
    ("Three balls beside two rings; a baseball cap.", ["sphere", "torus", "cap"]),  # a synonym's plural, a phrase
    ("a pentagonal prism and tori", ["pentagon", "torus"]),  # a two-word synonym, an irregular plural
    ("LEAVES, Stars and a Moon", ["leaf", "star", "moon"]),  # case, irregular plural
    ("a t-shirt", []),  # '-' joins words: no "t" name here, and nothing else matches
])
def test_answers_parse_to_known_names_in_mention_order(answer, named):
    assert parse_answer(answer, NAMES, FORMS) == named


def test_a_spelling_two_names_share_names_neither_and_a_name_stays_its_own():
    forms = mention_forms(["mug", "cup", "pot"], {"mug": ["cup", "beaker"], "pot": ["beaker"]})
    assert "cup" not in forms["mug"] and "beaker" not in forms["mug"] + forms["pot"]
    assert parse_answer("a cup, a beaker and mugs", ["mug", "cup", "pot"], forms) == ["cup", "mug"]


def _row(by_size, named, answer="x"):
    return {"prompt": "list", "objects_by_size": by_size, "named": named, "answer": answer}


def _stat(group, metric, role):
    return next(s for s in group["metrics"][metric] if s["role"] == role)


def test_tables_count_first_mention_recall_and_position_by_size_rank():
    rows = [_row(["cube", "cone", "star"], ["cube", "cone"]),  # largest first, smallest missed
            _row(["cube", "cone", "star"], ["star", "moon", "cube"]),  # smallest first, an absent name
            _row(["heart", "leaf", "cross"], [], answer=""),  # empty: no trial of first / position
            _row(["heart", "leaf", "cross"], ["leaf"])]
    (g,) = mention_tables(rows, n_boot=0, seed=0)
    assert g["key"] == "prompt list, 3 objects" and g["queries"] == 4
    assert (g["empty_answers"], g["absent_named"], g["none_named"]) == (1, 1, 1)
    first = [_stat(g, "first named", r) for r in ("largest", "2nd largest", "3rd largest")]
    assert [s["acc"] for s in first] == [1 / 3, 1 / 3, 1 / 3] and {s["n"] for s in first} == {3}
    assert first[0]["chance"] == pytest.approx(1 / 3)
    recall = {r: _stat(g, "recall", r)["acc"] for r in ("largest", "2nd largest", "3rd largest", POOLED_SMALL)}
    assert recall == {"largest": 0.5, "2nd largest": 0.5, "3rd largest": 0.25, POOLED_SMALL: 3 / 8}
    pos = _stat(g, "mean position", "largest")  # cube 1st of 2, cube 2nd of 2 (moon is absent)
    assert (pos["mean"], pos["n"], pos["chance"], pos["unit"]) == (1.5, 2, 1.5, "x")
    assert _stat(g, "mean position", "2nd largest")["mean"] == pytest.approx(1.5)  # cone 2nd, leaf 1st


def test_the_built_in_prompts_load_and_a_bad_prompts_file_is_one_line(tmp_path):
    p = load_prompts()
    assert p.mention and p.matching and p.source == "built-in" and p.max_new_tokens >= 1
    cases = {"not toml": "[mention", "no prompts": "[mention]\nmax_new_tokens = 4\n[matching]\nprompt = 'x'\n",
             "bad tokens": "[mention]\nmax_new_tokens = 0\n[mention.prompts]\na = 'b'\n[matching]\nprompt = 'x'\n",
             "no matching": "[mention.prompts]\na = 'b'\n"}
    for why, text in cases.items():
        f = tmp_path / f"{why}.toml"
        f.write_text(text)
        with pytest.raises(UserError, match="--vlm-prompts"):
            load_prompts(f)
    latin = tmp_path / "latin.toml"
    latin.write_bytes("[mention.prompts]\na = 'caf\xe9'\n".encode("latin-1"))
    with pytest.raises(UserError, match="not UTF-8"):
        load_prompts(latin)


def test_the_page_reads_the_tables_and_keeps_every_answer_beside_them(tmp_path):
    import json

    from comco.probes.page import write_reports

    rows = [dict(_row(["cube", "cone", "star"], ["cube", "star"] if i % 4 else ["cone"]), record=f"{i:06d}")
            for i in range(24)]  # largest named first in 18 of 24, the 2nd in 6
    groups = mention_tables(rows, n_boot=50, seed=0)
    results = {"generator": "test", "seed": 0, "n_boot": 50, "dataset": {"root": "ds", "scenes": 24},
               "options": {"probes": ["mention"]}, "models": [{"label": "vlm:m", "name": "vlm:m"}],
               "skipped": {}, "probes": {"mention": {"vlm:m": groups}}, "answers": rows}
    write_reports(tmp_path, results, plots=False)
    kept = [json.loads(line) for line in (tmp_path / "answers.jsonl").read_text().splitlines()]
    assert kept == rows and json.loads((tmp_path / "results.json").read_text())["answers"] == "answers.jsonl"
    page = (tmp_path / "report.md").read_text()
    assert "**Generative VLMs**" in page and "| vlm:m | prompt list, 3 objects | 75.0 [" in page
    assert "| 33.3 |" in page  # chance 1 / 3
    table = (tmp_path / "mention.md").read_text()
    assert "| *chance* | 1.50 | 1.00 | 1.50 |" in table  # a place, not a %: the cone is named alone


def test_a_vlm_run_asks_only_what_a_vlm_can_do():
    from comco.models import ModelRef
    from comco.probes.runner import ProbeOptions, _generative_options

    vlm, clip = ModelRef("vlm:/m"), ModelRef("ViT-S-32", "none")
    opts, prompts = _generative_options([vlm], ProbeOptions())
    assert opts.probes == ["mention", "matching"] and prompts.source == "built-in"
    opts, _ = _generative_options([clip, vlm], ProbeOptions(probes=["matching"]))
    assert opts.probes == ["matching"]  # the CLIP by cosine, the VLM by likelihood
    assert _generative_options([clip], ProbeOptions()) == (ProbeOptions(), None)
    for models, asked, says in (([vlm], ["tor"], "cannot run tor"), ([clip, vlm], ["mention"], "embeds"),
                                ([vlm], ["size-class", "matching"], "cannot run size-class")):
        with pytest.raises(UserError, match=says):
            _generative_options(models, ProbeOptions(probes=asked))
    with pytest.raises(UserError, match="--vlm-prompts is for"):
        _generative_options([clip], ProbeOptions(vlm_prompts="p.toml"))
