"""The mention probe of a generative VLM: ask it to list the objects in each image, find the
set's names in the answer (whole words, plurals, synonyms; comco.probes.words), and report by
measured size rank where each object is mentioned and how often it is mentioned at all.

ComCO's image-side finding is that CLIP's image embedding favours the largest object. A VLM
that reuses such a vision tower would show it as: the largest object named first more often
than 1 / n, and small objects named less often (recall) than the large one.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from comco.errors import UserError
from comco.io import MAX_SMALL_BYTES, parse_toml, read_bounded
from comco.probes.retrieval import size_labels
from comco.probes.stats import accuracy, mean_with_interval
from comco.probes.words import mention_sequence
from comco.record import measured_ranks

DEFAULT_PROMPTS = "vlm_prompts.toml"
POOLED_SMALL = "small (pooled)"
MAX_NEW_TOKENS = 2048
MAX_PROMPT_CHARS = 8000  # a prompt is tokenised and run once per image: a 1 MB one never finishes


@dataclass(frozen=True)
class VLMPrompts:
    mention: dict[str, str]  # prompt name -> text
    max_new_tokens: int
    matching: str
    source: str  # the file they came from ("built-in" for the package's own)


def load_prompts(path: Path | None = None) -> VLMPrompts:
    """The prompts file (`--vlm-prompts`, default probes/vlm_prompts.toml), checked: one line for a bad one."""
    if path is None:
        text, where = resources.files("comco.probes").joinpath(DEFAULT_PROMPTS).read_text("utf-8"), "built-in"
    else:
        if not Path(path).is_file():
            raise UserError(f"--vlm-prompts {path} does not exist")
        try:
            text, where = read_bounded(path, "--vlm-prompts", MAX_SMALL_BYTES).decode("utf-8"), str(path)
        except UnicodeDecodeError:
            raise UserError(f"--vlm-prompts {path} is not UTF-8 text") from None
    table = parse_toml(text, f"--vlm-prompts {where}")
    mention = table.get("mention", {})
    prompts = mention.get("prompts") if isinstance(mention, dict) else None
    if not isinstance(prompts, dict) or not prompts or not all(
            isinstance(k, str) and k.strip() and isinstance(v, str) and v.strip() for k, v in prompts.items()):
        raise UserError(f"--vlm-prompts {where}: [mention.prompts] must name at least one prompt (name = \"text\")")
    tokens = mention.get("max_new_tokens", 64)
    if not isinstance(tokens, int) or isinstance(tokens, bool) or not 1 <= tokens <= MAX_NEW_TOKENS:
        raise UserError(f"--vlm-prompts {where}: mention.max_new_tokens must be a whole number in 1..{MAX_NEW_TOKENS}")
    matching = table.get("matching", {})
    prompt = matching.get("prompt") if isinstance(matching, dict) else None
    if not isinstance(prompt, str) or not prompt.strip():
        raise UserError(f"--vlm-prompts {where}: [matching] needs prompt = \"text\"")
    long = next((name for name, text in (*prompts.items(), ("matching", prompt)) if len(text) > MAX_PROMPT_CHARS), None)
    if long is not None:
        raise UserError(f"--vlm-prompts {where}: prompt '{long}' is longer than {MAX_PROMPT_CHARS} characters; "
                        f"a prompt is a question about one image (comco's are under 300)")
    return VLMPrompts(mention=dict(prompts), max_new_tokens=tokens, matching=prompt, source=where)


def mention_forms(names: list[str], forms: dict[str, list[str]]) -> dict[str, list[str]]:
    """Every spelling that names each object: the manifest's plural and synonyms, the synonyms'
    plurals, and for COCO names the caption statistics' synonym table. A spelling two names
    share says neither, so it is dropped."""
    from comco.probes.natural.corpus import load_synonyms, plural

    try:
        coco = load_synonyms(None, set(names))
    except UserError:  # the table gives a word to two of these names: use the manifests alone
        coco = {}
    spellings = {}
    for n in names:
        words = [n.lower(), *(w.lower() for w in forms.get(n, []))]
        spellings[n] = list(dict.fromkeys([*(s for w in words for s in (w, plural(w))), *coco.get(n, [])]))
    owners = defaultdict(set)
    for n, ss in spellings.items():
        for s in ss:
            owners[s].add(n)
    return {n: [s for s in ss[1:] if len(owners[s]) == 1 and (s not in spellings or s == n)]
            for n, ss in spellings.items()}


def parse_answer(answer: str, names: list[str], forms: dict[str, list[str]]) -> list[str]:
    """The set's names an answer mentions, first mention first (each once)."""
    return mention_sequence(answer, names, forms)


def ask(data, vlm, prompts: VLMPrompts, *, batch_size: int, progress=None) -> list[dict]:
    """Every image asked every mention prompt: one row per answer (the answers JSONL's rows)."""
    from PIL import Image

    forms = mention_forms(data.names, data.forms)
    rows = []
    for name, text in prompts.mention.items():
        advance = progress(f"mention: asking {len(data.records)} images (prompt {name})", len(data.records),
                           "images") if progress else None
        for start in range(0, len(data.records), batch_size):
            recs = data.records[start:start + batch_size]
            images = []
            for r in recs:
                with Image.open(data.image_path(r)) as im:
                    images.append(im.convert("RGB"))
            for r, answer in zip(recs, vlm.answer(images, text, prompts.max_new_tokens)):
                ranks = measured_ranks(r)
                by_size = [o["name"] for _, o in sorted(zip(ranks, r["objects"]), key=lambda t: t[0])]
                rows.append({"model": vlm.name, "record": r["id"], "image": r["image"], "prompt": name,
                             "text": text, "answer": answer, "named": parse_answer(answer, data.names, forms),
                             "objects_by_size": by_size})
            if advance:
                advance(len(recs))
    return rows


def mention_tables(rows: list[dict], *, n_boot: int, seed: int) -> list[dict]:
    """Per (prompt, object count): which size rank is named first, how often each rank is named
    (recall, with the small objects pooled), and its mean position among the present objects named."""
    groups = defaultdict(list)
    for row in rows:
        groups[(row["prompt"], len(row["objects_by_size"]))].append(row)
    out = []
    for (prompt, n), group in groups.items():
        roles = size_labels(n)
        first, recall, position, clusters = defaultdict(list), defaultdict(list), defaultdict(list), defaultdict(list)
        empty = absent_named = none_named = 0
        for i, row in enumerate(group):
            present = row["objects_by_size"]
            named = [x for x in row["named"] if x in present]
            empty += not row["answer"].strip()
            absent_named += any(x not in present for x in row["named"])
            none_named += not named
            for rank, obj in enumerate(present):
                recall[roles[rank]].append(obj in named)
                clusters[roles[rank]].append(i)
                if rank:
                    recall[POOLED_SMALL].append(obj in named)
                    clusters[POOLED_SMALL].append(i)
                if obj in named:
                    position[roles[rank]].append((named.index(obj) + 1, (len(named) + 1) / 2, i))
            if named:
                for rank, obj in enumerate(present):
                    first[roles[rank]].append((named[0] == obj, i))
        kw = {"n_boot": n_boot}
        metrics = {
            "first named": [{"role": r, **accuracy([h for h, _ in first[r]], [c for _, c in first[r]],
                                                   chance=1 / n, seed=seed + k, **kw)}
                            for k, r in enumerate(roles)],
            "recall": [{"role": r, **accuracy(recall[r], clusters[r], seed=seed + k, **kw)}
                       for k, r in enumerate([*roles, POOLED_SMALL])],
            "mean position": [_position(position[r], seed + k, n_boot) | {"role": r} for k, r in enumerate(roles)],
        }
        out.append({"key": f"prompt {prompt}, {n} objects", "prompt": prompt, "n_objects": n,
                    "queries": len(group), "empty_answers": empty, "absent_named": absent_named,
                    "none_named": none_named, "metrics": metrics})
    return out


def _position(trials: list[tuple[int, float, int]], seed: int, n_boot: int) -> dict:
    """Mean position (1 = named first) among the present objects named; chance is the mean
    of (k + 1) / 2 over the same answers, k the number of present objects each named."""
    values = np.array([t[0] for t in trials], dtype=np.float64)
    chance = float(np.mean([t[1] for t in trials])) if trials else None
    stat = mean_with_interval(values, [t[2] for t in trials], chance=chance, n_boot=n_boot, seed=seed)
    return {**stat, "unit": "x"}
