"""`python -m comco.lab.executors.worker CALL.json`: run one stage in this process (the node
executor's stage processes); writes {"summary", "seconds", "processes"} where CALL.json says.

Started by torchrun (a training on a DDP group, comco.lab.executors.node.launch), every rank
runs the stage's training, which joins the process group itself (comco.train.distributed);
rank 0 alone keeps the stage's bookkeeping and writes the result."""

from __future__ import annotations

import json
import os
import sys

from comco.io import write_json
from comco.lab.executors.base import StageCall, run_call


def main(spec_path: str) -> None:
    spec = json.loads(open(spec_path, encoding="utf-8").read())
    call = StageCall(**spec["call"])
    if int(os.environ.get("RANK", "0")) != 0:
        from comco.lab.stages import execute

        execute(call.kind, call.config, call.deps, call.out, call.threads)
        _leave_group()
        return
    summary, seconds = run_call(call)
    write_json(spec["result"], {"summary": summary, "seconds": seconds, **_group()})
    _leave_group()


def _group() -> dict:
    """The process group the training formed, as torch saw it (none for one process)."""
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return {}
    return {"processes": dist.get_world_size(), "backend": str(dist.get_backend())}


def _leave_group() -> None:
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
