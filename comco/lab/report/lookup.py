"""The report's one way to a stage's output: by its key, through the run's graph.

The run hands the report stage only when every stage it depends on has finished, so a
stage of the graph without its stage.json (or a probe without its results.json) is a
bug, not a user's mistake: `MissingStage` (an internal error with its traceback) names
the key. A key the graph does not hold (a kind of stage the recipe did not ask for) is
asked with `has()` first; asking for it anyway is the same error.
"""

from __future__ import annotations

import json
from pathlib import Path

from comco.lab.graph import Stages
from comco.lab.keys import StageKey

STAGE_INFO = "stage.json"
RESULTS = "results.json"


class MissingStage(RuntimeError):
    """A stage the report needs is not in the graph or did not finish (internal error)."""


class Run:
    """The finished stages of one run folder, looked up by StageKey."""

    def __init__(self, out: str | Path, stages):
        self.out = Path(out)
        self.stages = stages if isinstance(stages, Stages) else Stages(stages)
        self._cache: dict[tuple[StageKey, str], dict] = {}

    def has(self, key: StageKey) -> bool:
        """Whether the recipe's graph holds this stage."""
        return key in self.stages

    def folder(self, key: StageKey) -> Path:
        stage = self.stages.get(key)
        if stage is None:
            raise MissingStage(f"the report needs stage {key.id} ({key}), which the run's graph does not hold")
        return stage.folder(self.out)

    def _json(self, key: StageKey, name: str) -> dict:
        if (key, name) not in self._cache:
            path = self.folder(key) / name
            if not path.is_file():
                raise MissingStage(f"the report needs {name} of stage {key.id}, which is missing ({path}): "
                                   "the stage did not finish, or it was deleted after it did")
            self._cache[key, name] = json.loads(path.read_text(encoding="utf-8"))
        return self._cache[key, name]

    def info(self, key: StageKey) -> dict:
        """The stage's stage.json (what ran, its seconds, its summary)."""
        return self._json(key, STAGE_INFO)

    def summary(self, key: StageKey) -> dict:
        return self.info(key).get("summary", {})

    def results(self, key: StageKey) -> dict:
        """A probe stage's results.json."""
        return self._json(key, RESULTS)

    def data(self, key: StageKey) -> Path:
        """The dataset folder of a render or captions stage."""
        return self.folder(key) / "data"

    def finished(self) -> dict[str, dict]:
        """stage id -> stage.json of every stage but the report (all finished when it runs)."""
        return {st.id: self.info(st.key) for st in self.stages if st.kind != "report"}
