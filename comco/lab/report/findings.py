"""The report's opening: one figure of the two biases against p (with the untrained
priors), then one line per question with its number, interval and verdict, each linking
to the section it comes from."""

from __future__ import annotations

from pathlib import Path

from comco.lab.report.context import Finding
from comco.lab.report.figures import findings_plot
from comco.lab.report.verdict import CANNOT, CONTRADICTED, FRAGILE, SUPPORTED
from comco.report import Doc

MARK = {SUPPORTED: "**supported**", CONTRADICTED: "**contradicted**", FRAGILE: "fragile", CANNOT: "cannot answer"}


def findings_figure(fig: Path, oset: str, ps: list, dose: dict) -> Path | None:
    """TOR first-mention share and IOR largest-object share against p, per object count."""
    panels: dict = {"TOR: the first mention's share": {}, "IOR: the largest object's share": {}}
    priors: dict = {k: {} for k in panels}
    chances: dict = {k: {} for k in panels}
    for name, (prefix, field, prior_field) in zip(panels, (("tor_", "first_share", "prior_first_share"),
                                                         ("ior_", "largest_share", "prior_largest_share"))):
        for key, block in sorted(dose.items()):
            if not key.startswith(prefix) or not key[len(prefix):].isdigit():
                continue
            n = int(key[len(prefix):])
            label = f"{n} objects"
            panels[name][label] = [block[field][f"{p:g}"] for p in ps]
            priors[name][label] = block.get(prior_field)
            chances[name][label] = 1 / n
    if not any(panels.values()):
        return None
    return findings_plot(fig / f"{oset}-findings.png", f"The two biases against p ({oset})", ps, panels, priors,
                         chances)


def findings_section(doc: Doc, figures: list[Path | None], findings: list[Finding], many_sets: bool,
                     leads: list[Doc] = ()) -> None:
    doc.h(2, "Findings")
    for lead in leads:  # a recipe's own headline table (the fixes') comes first
        doc.extend(lead)
    doc.p("The order bias of the text encoder (TOR: which mention a caption's embedding is nearest) and the size "
          "bias of the image encoder (IOR: which object an image's embedding is nearest) of the gated scratch "
          "models, against the order bias p of their training captions, beside the untrained architecture. "
          "Then each question the lab asks, with its estimate (95 % interval across seeds) and its verdict, by one "
          "rule: **supported** or **contradicted** where the interval excludes zero (paired by seed where the "
          "design pairs models), *cannot answer* where too few models passed their gates or the interval "
          "includes zero, and *fragile* where the interval excludes zero with every seed but not with one of "
          "them left out (not a finding). The sections below hold the tables and the reasoning.")
    for path in figures:
        doc.img(path, "the two biases against p")
    rows = []
    for i, f in enumerate(findings, 1):
        where = f"[{f.section.split(':')[0]}](#{f.anchor})"
        question = f"`{f.object_set}`: {f.question}" if many_sets else f.question
        rows.append([i, question, f.number, MARK.get(f.judgement.verdict, f.judgement.verdict)
                     + f" ({f.judgement.reason})", where])
    if rows:
        doc.table(["#", "question", "estimate [95 % interval]", "verdict", "section"], rows)
    else:
        doc.p("No question of this recipe could be asked: no stage measured a model.")
