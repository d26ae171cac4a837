"""What every section of the lab report shares for one object set, and a finding: one
line of the report's opening summary."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from comco.lab.report.lookup import Run
from comco.lab.report.verdict import Judgement
from comco.report import Doc


@dataclass
class Finding:
    """One question the lab answers: its estimate as text, the verdict, the section it comes from."""

    question: str
    number: str
    judgement: Judgement
    anchor: str
    section: str  # the heading it links to
    object_set: str

    def to_dict(self) -> dict:
        return {"object_set": self.object_set, "question": self.question, "number": self.number,
                "section": self.anchor, **self.judgement.to_dict()}


@dataclass
class SetContext:
    """One object set's part of the report: the document, the run, the recipe's settings."""

    doc: Doc
    run: Run
    fig: Path
    oset: str
    s: dict  # the recipe's settings at its scale
    findings: list[Finding] = field(default_factory=list)
    section: str = ""  # the anchor of the section being written (findings link to it)
    title: str = ""  # its heading
    figures: list[Path] = field(default_factory=list)  # figures the findings open with beside the two biases
    leads: list[Doc] = field(default_factory=list)  # tables the findings open with, before everything else

    @property
    def ps(self) -> list[float]:
        return self.s["data"]["order_bias"]

    @property
    def seeds(self) -> list[int]:
        return self.s["scratch"]["seeds"]

    @property
    def need(self) -> int:
        return self.s["gates"]["min_passing"]

    def h(self, level: int, text: str) -> str:
        """A heading; the findings written after it link to it."""
        self.section, self.title = self.doc.h(level, text), text
        return self.section

    def find(self, question: str, number: str, judgement: Judgement) -> None:
        self.findings.append(Finding(question, number, judgement, self.section, self.title, self.oset))
