"""`--model vlm:DIR` on a tiny random LLaVA the tests build (tests/support/vlm.py): the whole
path (load, prompt, greedy decode, parse, caption likelihood, report), the answers and scores
checked against a direct use of the model, and bad folders and probes refused in one line."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.probes import make_dataset
from support.vlm import save_tiny_llava

pytestmark = pytest.mark.torch
COMCO = [sys.executable, "-m", "comco.cli"]


@pytest.fixture(scope="module")
def vlm_folder(tmp_path_factory) -> Path:
    return save_tiny_llava(tmp_path_factory.mktemp("vlm") / "tiny-llava")


@pytest.fixture(scope="module")
def scenes(tmp_path_factory) -> Path:
    return make_dataset(tmp_path_factory.mktemp("vlm-ds") / "ds", n=6, objects=(3,), singles=False)


def comco(monkeypatch, capsys, *args) -> tuple[int, str, str]:
    """`comco ARGS` in this process (comco.cli.app.main): exit code, stdout, stderr."""
    from comco.cli.app import main

    monkeypatch.setattr(sys, "argv", ["comco", *map(str, args)])
    with pytest.raises(SystemExit) as done:
        main()
    out = capsys.readouterr()
    return done.value.code, out.out, out.err


def test_the_whole_path_runs_and_reports(vlm_folder, scenes, tmp_path, monkeypatch, capsys, single_thread):
    from comco.probes.mention import load_prompts, mention_forms, parse_answer
    from comco.probes.probe_data import open_dataset

    out = tmp_path / "out"
    code, said, err = comco(monkeypatch, capsys, "probe", scenes, "--model", f"vlm:{vlm_folder}",
                            "--max-distractors", "2", "--bootstrap", "20", "--no-cache", "--quiet", "--out", out)
    assert code == 0, err
    res = json.loads((out / "results.json").read_text())
    label = f"vlm:{vlm_folder}"
    assert set(res["probes"]) == {"mention", "matching"} and res["answers"] == "answers.jsonl"
    assert res["options"]["probes"] == ["mention", "matching"]
    assert res["models"][0]["generated"] == {"answers": 12, "captions_scored": 36}
    prompts = load_prompts()
    rows = [json.loads(line) for line in (out / "answers.jsonl").read_text().splitlines()]
    assert len(rows) == 6 * len(prompts.mention) and {r["prompt"] for r in rows} == set(prompts.mention)
    data = open_dataset(scenes)
    forms = mention_forms(data.names, data.forms)
    for r in rows:  # every answer kept with what it was asked and what the parser found
        assert r["text"] == prompts.mention[r["prompt"]] and r["answer"] and (scenes / r["image"]).is_file()
        assert r["named"] == parse_answer(r["answer"], data.names, forms)
    assert any(r["named"] for r in rows)  # the random model's words include set names: the parser has work
    mention = res["probes"]["mention"][label]
    assert [g["key"] for g in mention] == [f"prompt {p}, 3 objects" for p in prompts.mention]
    assert all(g["queries"] == 6 and set(g["metrics"]) == {"first named", "recall", "mean position"} for g in mention)
    (match,) = res["probes"]["matching"][label]
    assert match["key"] == "photo, 3 objects, caption likelihood" and len(match["metrics"]) == 2
    assert all(s["n"] == 12 and 0 <= s["acc"] <= 1 for stats in match["metrics"].values() for s in stats)
    page = (out / "report.md").read_text()
    assert "Generative VLM: which objects its answer names" in page and "caption likelihood" in page
    assert (out / "mention.csv").is_file() and (out / "matching.md").is_file()


def _images(scenes, k=3):
    from PIL import Image

    from comco.probes.probe_data import open_dataset

    data = open_dataset(scenes)
    return [Image.open(data.image_path(r)).convert("RGB") for r in data.records[:k]]


def test_answers_are_greedy_and_the_same_alone_or_in_a_batch(vlm_folder, scenes, single_thread):
    import torch

    from comco.models import ModelRef

    vlm = ModelRef(f"vlm:{vlm_folder}").load("cpu")
    images, prompt = _images(scenes), "List every object you see in this image."
    together = vlm.answer(images, prompt, max_new_tokens=8)
    assert together == [vlm.answer([im], prompt, max_new_tokens=8)[0] for im in images]
    batch = vlm.processor(text=[vlm.chat(prompt)], images=[[images[0]]], return_tensors="pt")
    ids = batch["input_ids"]
    with torch.no_grad():  # greedy by hand: the likeliest next token, eight times
        for _ in range(8):
            logits = vlm.model(**{**batch, "input_ids": ids, "attention_mask": torch.ones_like(ids)}).logits
            ids = torch.cat([ids, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    by_hand = vlm.processor.batch_decode(ids[:, batch["input_ids"].shape[1]:], skip_special_tokens=True)[0]
    assert together[0] == by_hand.strip()


def test_caption_log_probs_are_those_of_a_direct_forward(vlm_folder, scenes, single_thread):
    import torch

    from comco.models import ModelRef

    vlm = ModelRef(f"vlm:{vlm_folder}").load("cpu")
    (image,), prompt = _images(scenes, 1), "Write a short caption for this image."
    captions = ["a photo of a cube", "a photo of a cone , a star and a moon", "a cube"]
    scored = vlm.caption_logprobs(image, prompt, captions, batch_size=3)
    alone = vlm.caption_logprobs(image, prompt, captions, batch_size=1)  # padded in a batch of 3, not alone
    assert [n for _, n in scored] == [n for _, n in alone]
    assert [s for s, _ in scored] == pytest.approx([s for s, _ in alone], abs=1e-4)
    prefix = vlm.processor(text=[vlm.chat(prompt)], images=[[image]], return_tensors="pt")["input_ids"].shape[1]
    for caption, (total, n) in zip(captions, scored):
        batch = vlm.processor(text=[vlm.chat(prompt) + caption], images=[[image]], return_tensors="pt")
        with torch.no_grad():
            lp = vlm.model(**batch).logits[0].float().log_softmax(-1)
        ids = batch["input_ids"][0]
        expected = sum(float(lp[t - 1, ids[t]]) for t in range(prefix, len(ids)))
        assert n == len(vlm.processor.tokenizer(caption, add_special_tokens=False)["input_ids"]) == len(ids) - prefix
        assert total == pytest.approx(expected, abs=1e-4) and total < 0


def _folders(vlm_folder: Path, root: Path) -> dict[str, tuple[Path, str]]:
    """Bad vlm: folders -> (folder, what the one line says)."""
    cases = {}
    (root / "empty").mkdir()
    cases["empty"] = (root / "empty", "not a transformers model folder")
    for name, config, says in (("damaged", b"\xff{ not json", "config.json is not a JSON object"),
                               ("clip", b'{"model_type": "clip"}', "not an image-text-to-text model")):
        (root / name).mkdir()
        (root / name / "config.json").write_bytes(config)
        cases[name] = (root / name, says)
    (root / "sentence").mkdir()
    (root / "sentence" / "modules.json").write_text("[]")
    cases["sentence"] = (root / "sentence", "sentence-transformers folder")
    plain = root / "no-template"
    shutil.copytree(vlm_folder, plain)
    (plain / "chat_template.jinja").unlink()
    cases["no template"] = (plain, "no chat template")
    # issue 38: a template jinja2's sandbox blocks, one that raises, a processor size of -5
    for name, edit in (("sandboxed", lambda f: (f / "chat_template.jinja").write_text("{{ ''.__class__.__mro__ }}")),
                       ("raises", lambda f: (f / "chat_template.jinja").write_text(
                           "{{ raise_exception('no images here') }}")),
                       ("size -5", _size_minus_5)):
        folder = root / name
        shutil.copytree(vlm_folder, folder)
        edit(folder)
        cases[name] = (folder, "cannot write a prompt about an image")
    return cases


def _size_minus_5(folder: Path) -> None:
    pp = folder / "processor_config.json"
    cfg = json.loads(pp.read_text())
    cfg["image_processor"].update(size={"shortest_edge": -5}, crop_size={"height": -5, "width": -5})
    pp.write_text(json.dumps(cfg))


def test_bad_folders_and_probes_a_vlm_cannot_do_are_one_line(vlm_folder, scenes, tmp_path, monkeypatch, capsys):
    out = tmp_path / "o"
    model = ["--model", f"vlm:{vlm_folder}"]
    runs = {why: ([scenes, "--model", f"vlm:{folder}"], says)
            for why, (folder, says) in _folders(vlm_folder, tmp_path).items()}
    runs |= {
        "text probe": ([scenes, *model, "--probes", "tor"], "generative VLM and cannot run tor"),
        "image probe": ([scenes, *model, "--probes", "ior,mention"], "cannot run ior"),
        "text only": (["--text-only", "--object-set", "simco", *model], "--text-only embeds captions"),
        "mention of a CLIP": ([scenes, *model, "--model", "ViT-S-32", "--pretrained", "none", "--probes", "mention"],
                              "probe 'mention' asks a generative VLM"),
        "prompts file": ([scenes, *model, "--vlm-prompts", tmp_path / "none.toml"], "--vlm-prompts"),
    }
    for why, (args, says) in runs.items():
        code, _, err = comco(monkeypatch, capsys, "probe", *args, "--no-cache", "--quiet", "--out", out)
        assert code == 2, (why, err)
        assert len(err.strip().splitlines()) == 1 and says in err, (why, err)
        assert not out.exists(), why
    code, _, err = comco(monkeypatch, capsys, "eval", "retrieval", "--benchmark", "coco", "--root", tmp_path, *model,
                         "--out", out)
    assert code == 2 and "generative VLM" in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_cut_weights_are_one_line_from_the_command(vlm_folder, scenes, tmp_path):
    cut = tmp_path / "cut"
    shutil.copytree(vlm_folder, cut)
    weights = cut / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:200])
    r = subprocess.run([*COMCO, "probe", str(scenes), "--model", f"vlm:{cut}", "--no-cache", "--quiet",
                        "--out", str(tmp_path / "o")], capture_output=True, text=True)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr[-2000:]
    assert "weights cannot be read" in r.stderr and not (tmp_path / "o").exists()
