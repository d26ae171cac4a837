"""The lab's report: report.md, report.html (images inline) and results.json.

It opens with the findings (one figure of the two biases against p, then one line per
question with its estimate and verdict, linked to its section); the sections follow: a
sample of the renders, the competence gates of every probed model (a model below a gate
is listed there and left out of every fit, comparison and paragraph; the untrained
models of each seed, the architecture's prior, sit beside the trained ones as a
reference), the dose-response of TOR, IOR and text sensitivity, the fine-tunes and the
DeBias analyses, LABCLIP, and what was run where.

Numbers come from the finished stages, found by their keys (`lookup.Run`; a stage the
report needs that is missing is an internal error naming it). Every verdict comes from
one rule (`verdict`): means over seeds with a Student-t 95 % interval, paired by seed
where the design pairs models, a direction read only where the interval excludes zero,
and each seed left out in turn. Published figures appear only as labelled reference rows.

Modules: stats (intervals, formats), verdict (the rule), lookup (stages by key), context
(one object set's part; a finding), figures, gates, dose, shift (held-out compositions and the
domain shift), origins (the [[scratch.variants]] beside the baseline), development (the curves
along training), finetune, fixes (the field's training fixes against the plain model: the
table the findings open with), labclip, provenance, findings.
"""

from __future__ import annotations

from pathlib import Path

from comco.io import write_json, write_text
from comco.lab.keys import captions_key, render_key
from comco.lab.report.context import SetContext
from comco.lab.report.development import development_sections
from comco.lab.report.dose import dose_sections, prior_probes, scratch_probes
from comco.lab.report.figures import sample_grid
from comco.lab.report.findings import findings_figure, findings_section
from comco.lab.report.finetune import finetune_sections
from comco.lab.report.fixes import fixes_sections
from comco.lab.report.gates import gates_section
from comco.lab.report.labclip import labclip_section
from comco.lab.report.lookup import MissingStage, Run
from comco.lab.report.origins import origins_sections
from comco.lab.report.provenance import what_was_run, where_made
from comco.lab.report.shift import shift_sections
from comco.report import Doc, defuse_markdown

FIGURES = "figures"
__all__ = ["write_report", "MissingStage"]


def write_report(out: Path, report_stage, stages: list) -> dict:
    """The lab report (report.md, report.html, results.json) from every finished stage.

    Args:
        out: the run folder. report_stage: the report stage (its config holds the recipe).
        stages: every stage of the run, in graph order (a list or comco.lab.graph.Stages).
    """
    out = Path(out)
    recipe = report_stage.config["recipe"]
    s = recipe["settings"]
    run = Run(out, stages)
    info = run.finished()
    fig = out / FIGURES
    detail = Doc()
    numbers: dict = {"recipe": recipe["name"], "scale": recipe["scale"], "object_sets": {}}
    contexts = []
    for oset in s["data"]["object_sets"]:
        c = SetContext(detail, run, fig, oset, s)
        numbers["object_sets"][oset] = object_set_sections(c)
        contexts.append(c)
    made = where_made(info)
    what_was_run(detail, recipe, run.stages, info, made)
    doc = Doc()
    doc.h(1, f"comco lab: {recipe['name']} ({recipe['scale']} scale)")
    doc.p(defuse_markdown(recipe["description"]))
    doc.toc(depth=3)
    figures = []
    for c in contexts:  # the two biases against p, then the variants' figure where the recipe has variants
        figures += [findings_figure(fig, c.oset, c.ps, numbers["object_sets"][c.oset].get("dose_response", {})),
                    *c.figures]
    findings = [f for c in contexts for f in c.findings]
    findings_section(doc, figures, findings, many_sets=len(contexts) > 1,
                     leads=[lead for c in contexts for lead in c.leads])
    doc.extend(detail)
    numbers["findings"] = [f.to_dict() for f in findings]
    numbers["where_made"] = made
    write_text(out / "report.md", doc.markdown(out))
    write_text(out / "report.html", doc.html(f"comco lab: {recipe['name']}"))
    write_json(out / "results.json", numbers, indent=1)
    return {"report": "report.md", "html": "report.html", "results": "results.json",
            "figures": sorted(p.name for p in fig.glob("*.png")) if fig.is_dir() else []}


def object_set_sections(c: SetContext) -> dict:
    numbers: dict = {}
    s, run, oset = c.s, c.run, c.oset
    c.h(2, f"Object set `{oset}`")
    variants = {p: run.data(captions_key("train", oset, p)) for p in c.ps if run.has(captions_key("train", oset, p))}
    grid = sample_grid(c.fig / f"{oset}-samples.png", run.data(render_key("train", oset)), variants)
    c.h(3, "Sample of the rendered training images")
    c.doc.p(f"Training scenes hold {', '.join(map(str, s['data']['train_objects']))} objects; the held-out test "
            f"scenes hold {', '.join(map(str, s['data']['test_objects']))} with balanced mention orders (every object "
            f"equally often at every position). Each image below is one file shared by all caption variants; its "
            f"first `and` caption is shown at the lowest and the highest order bias p.")
    c.doc.img(grid, f"{oset} sample renders")
    cap_rows = []
    for p in variants:
        cap = run.summary(captions_key("train", oset, p))
        cap_rows.append([f"{p:g}", cap["images"], cap["captions"], f"{100 * cap['largest_first_share']:.1f}"])
    if cap_rows:
        c.doc.p("Realised caption policy: the share of training captions that name the largest object first "
                "(with p = 0 it is the balanced 1/n of the object counts mixed; a 1-object scene always names it "
                "first).")
        c.doc.table(["p", "images", "captions", "largest named first (%)"], cap_rows)
    passing, numbers["gates"] = gates_section(c)
    probes = scratch_probes(c, passing)
    prior = prior_probes(c)
    counts = sorted({int(n) for r in [*probes.values(), *prior] for n in r.get("tor", {}).get("and", {})})
    if counts:
        numbers["dose_response"] = dose_sections(c, probes, counts, prior)
        for name, section in (("origins", origins_sections), ("development", development_sections)):
            part = section(c, passing, counts)
            if part:
                numbers[name] = part
    shift = shift_sections(c, passing)
    if shift:
        numbers["shift"] = shift
    ft = finetune_sections(c, passing, prior)
    if ft:
        numbers["finetune"] = ft
    fixes = fixes_sections(c, passing, counts)
    if fixes:
        numbers["fixes"] = fixes
    lab = labclip_section(c)
    if lab:
        numbers["labclip"] = lab
    return numbers
