"""The probe page (or the lab report) in a real browser: headless Chromium opens report.html,
every figure loads, and the screenshot shows each one (not a blank box).

    .venv/bin/python benchmarks/probe_page.py [--out PROBE_OUT] [--screenshot page.png]
    .venv/bin/python benchmarks/probe_page.py --lab RUN [--screenshot page.png]

Without --out it first runs `comco probe` on a tiny painted dataset (5 object names, 3- and
4-object scenes) with two tiny random checkpoints. It prints, per figure, whether the
browser loaded it, its natural and drawn size (a figure wider than the page is shrunk, its
letters with it: a failure), and the share of non-white pixels inside its box on the
screenshot; then, per probe, what the figure's layout gets wrong, drawn again
from results.json as the page drew it (comco.report.plots.layout_problems: a title, legend or
panel title over another or over a panel, text cut at the edge, legend letters under 10 px).
With --lab RUN (a finished `comco lab run --out` folder) it first writes the run's report again
from its stages (report.md, report.html, results.json, figures/; no stage runs), checking the
layout of every figure as the report saves it (comco.report.checking_layout), then opens the page.
It exits 1 when a figure did not load, draws blank or has a layout problem, or when the page
has fewer figures than plots/ (figures/) holds. Needs `chromium` (Debian's package).
"""

from __future__ import annotations

import argparse
import html
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

# Runs once the page has loaded: where every image sits and whether it decoded.
CHECK = """<script>
window.addEventListener('load', function () {
  var images = [];
  document.querySelectorAll('img').forEach(function (im) {
    var r = im.getBoundingClientRect();
    images.push({alt: im.alt, complete: im.complete, natural: [im.naturalWidth, im.naturalHeight],
                 box: [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height]});
  });
  var pre = document.createElement('pre');
  pre.id = 'comco-check';
  pre.textContent = JSON.stringify({height: document.documentElement.scrollHeight, images: images});
  document.body.appendChild(pre);
});
</script>"""
WIDTH = 1100
MAX_HEIGHT = 16000  # device pixels: Chromium's screenshots stop near 16384
MIN_INK = 0.02  # a drawn figure has axes, bars and text: well above 2 % non-white pixels


def chromium(*args: str, timeout: float = 120) -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        sys.exit("chromium is not installed (apt-get install chromium)")
    r = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
                       capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        sys.exit(f"chromium failed ({r.returncode}): {r.stderr[-800:]}")
    return r.stdout


def tiny_run(folder: Path) -> Path:
    """`comco probe` with two tiny random checkpoints on a tiny painted dataset; returns its --out."""
    import torch
    from support.probes import invoke, make_dataset, small_set, tiny_open_clip

    from comco.models import save_checkpoint

    data = make_dataset(folder / "data", n=24, objects=(3, 4), object_set=str(small_set(folder / "set")))
    models = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        model, spec = tiny_open_clip()
        path = save_checkpoint(folder / f"tiny{seed}.pt", kind="scratch", model=model, model_spec=spec)
        models += ["--model", f"ckpt:{path}"]
    out = folder / "probe"
    r = invoke(data, *models, "--templates", "and,photo", "--bootstrap", "50", "--max-distractors", "2",
               "--no-cache", "--quiet", "--out", out)
    if r.exit_code != 0:
        sys.exit(f"comco probe failed: {r.output} {r.exception!r}")
    return out


def ink(png: Path, box: list[float]) -> float:
    """Share of clearly non-white pixels of the screenshot inside `box` (x, y, width, height)."""
    import numpy as np
    from PIL import Image

    with Image.open(png) as im:
        x, y, w, h = (int(round(v)) for v in box)
        crop = np.asarray(im.convert("L").crop((x, y, x + w, y + h)), dtype=float)
    return float((crop < 200).mean()) if crop.size else 0.0


def check_page(out: Path, screenshot: Path) -> dict:
    """Open out/report.html in Chromium; every figure's load state, box and ink on a screenshot."""
    work = Path(tempfile.mkdtemp(prefix="comco-page-"))
    page = work / "check.html"
    page.write_text((out / "report.html").read_text(encoding="utf-8").replace("</body>", CHECK + "</body>"),
                    encoding="utf-8")
    size = f"--window-size={WIDTH},1000"
    found = re.search(r'<pre id="comco-check">(.*?)</pre>', chromium(size, "--dump-dom", page.as_uri()), re.S)
    if not found:
        sys.exit("the page's check script did not run")
    state = json.loads(html.unescape(found.group(1)))
    height = int(state["height"])
    scale = min(1.0, MAX_HEIGHT / height)  # a long page is shot at a smaller zoom, so it fits one screenshot
    chromium(f"--window-size={WIDTH},{height}", f"--force-device-scale-factor={scale:.4f}",
             f"--screenshot={screenshot}", page.as_uri())
    for im in state["images"]:
        im["ink"] = ink(screenshot, [scale * v for v in im["box"]])
        # a figure wider than the page is shrunk to fit, and its letters with it
        im["shrunk"] = im["natural"][0] > 0 and im["box"][2] < 0.97 * im["natural"][0]
        im["ok"] = im["complete"] and im["natural"][0] > 0 and im["ink"] >= MIN_INK and not im["shrunk"]
    shutil.rmtree(work)
    figures = out / ("figures" if (out / "lab.json").is_file() else "plots")
    state["plots"] = sorted(p.name for p in figures.glob("*.png")) if figures.is_dir() else []
    return state


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="a `comco probe --out` folder (default: make a tiny one)")
    ap.add_argument("--lab", type=Path, help="a finished `comco lab run --out` folder: its report, written again")
    ap.add_argument("--screenshot", type=Path, help="where to keep the page's screenshot (PNG)")
    args = ap.parse_args()
    from comco.errors import UserError

    if args.lab and not ((args.lab / "lab.json").is_file() and (args.lab / "recipe.toml").is_file()):
        raise UserError(f"--lab {args.lab} is not a `comco lab run --out` folder (no lab.json and recipe.toml)")
    if args.out and not (args.out / "report.html").is_file():
        raise UserError(f"--out {args.out} holds no report.html; give a `comco probe --out` folder")
    tmp = Path(tempfile.mkdtemp(prefix="comco-probe-page-"))
    if args.lab:
        problems = lab_report(args.lab)
        out = args.lab
    else:
        out = args.out or tiny_run(tmp)
    shot = args.screenshot or tmp / "page.png"
    t = time.perf_counter()
    state = check_page(out, shot)
    seconds = time.perf_counter() - t
    for im in state["images"]:
        print(f"{'ok  ' if im['ok'] else 'FAIL'} {im['alt']}: loaded {im['complete']}, natural "
              f"{im['natural'][0]}x{im['natural'][1]}, drawn {im['box'][2]:.0f}x{im['box'][3]:.0f}, "
              f"{100 * im['ink']:.1f} % ink" + (", shrunk to fit the page (its letters too)" if im["shrunk"] else ""))
    print(f"{len(state['images'])} figures on the page, {len(state['plots'])} in plots/; page {state['height']} px "
          f"tall; browser checks {seconds:.1f} s; page {out / 'report.html'}; screenshot {shot}")
    if not args.lab:
        problems = layout(out)
    for probe, found in problems.items():
        print(f"{'ok  ' if not found else 'FAIL'} {probe} layout" + "".join(f"\n     {p}" for p in found))
    if not all(im["ok"] for im in state["images"]) or len(state["images"]) < len(state["plots"]) or \
            any(problems.values()):
        sys.exit(1)


def lab_report(run: Path) -> dict[str, list[str]]:
    """Write a finished lab run's report again from its stages; per figure, its layout problems."""
    from comco.io import read_json
    from comco.lab.graph import build_stages
    from comco.lab.keys import REPORT
    from comco.lab.recipe import load_recipe
    from comco.lab.report import write_report
    from comco.report import checking_layout

    scale = read_json(run / "lab.json", "lab.json").get("scale")
    stages = build_stages(load_recipe(run / "recipe.toml", scale))
    with checking_layout() as checked:
        write_report(run, stages.get(REPORT), stages)
    return {path.name: found for path, found in checked}


def layout(out: Path) -> dict[str, list[str]]:
    """Per probe figure: its layout problems, drawn again from results.json."""
    from comco.probes.report import FIGURE_DPI, draw_probe_figure, tables
    from comco.report.plots import layout_problems, pyplot

    found = {}
    for probe, tabs in tables(json.loads((out / "results.json").read_text())).items():
        fig, rect = draw_probe_figure(probe, tabs)
        found[probe] = layout_problems(fig, FIGURE_DPI, rect)
        pyplot().close(fig)
    return found


if __name__ == "__main__":
    from comco.errors import UserError

    try:
        main()
    except UserError as exc:  # a wrong folder: one line, as comco's commands say it
        print(f"probe_page.py: error: {exc}", file=sys.stderr)
        sys.exit(2)
