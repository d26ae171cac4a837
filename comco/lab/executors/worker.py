"""`python -m comco.lab.executors.worker CALL.json`: run one stage in this process (the node
executor's stage processes); writes {"summary", "seconds"} where CALL.json says."""

from __future__ import annotations

import json
import sys

from comco.io import write_json
from comco.lab.executors.base import StageCall, run_call


def main(spec_path: str) -> None:
    spec = json.loads(open(spec_path, encoding="utf-8").read())
    summary, seconds = run_call(StageCall(**spec["call"]))
    write_json(spec["result"], {"summary": summary, "seconds": seconds})


if __name__ == "__main__":
    main(sys.argv[1])
