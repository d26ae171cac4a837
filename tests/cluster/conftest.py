"""The tests marked slurm_real need the real one-node SLURM of tests/cluster/start-slurm.sh.

They run in the default selection when that cluster is up and are skipped, each with the
reason, when it is not; a line at the end of the run says which (support.realslurm.cluster_down
says what "up" means: the commands answer, the cluster is the start script's, named comco, its
node takes jobs and sacct works).
"""

from __future__ import annotations

import os

import pytest
from support.realslurm import cluster_down


def pytest_collection_modifyitems(config, items):
    reason = None
    for item in items:
        if item.get_closest_marker("slurm_real") is None:
            continue
        reason = reason or cluster_down() or ""
        if reason:
            item.add_marker(pytest.mark.skip(reason=f"real SLURM: {reason}"))


def pytest_terminal_summary(terminalreporter):
    marked = [r for key in ("passed", "failed", "skipped", "error") for r in terminalreporter.stats.get(key, [])
              if "slurm_real" in getattr(r, "keywords", {})]
    if not marked:
        return
    skipped = sum(r.skipped for r in marked)
    reason = cluster_down()
    if reason and skipped:
        terminalreporter.write_line(f"real SLURM: {skipped} slurm_real test(s) skipped: {reason}", yellow=True)
    else:
        terminalreporter.write_line(f"real SLURM: {len(marked) - skipped} slurm_real test(s) ran on the test "
                                    "cluster (tests/cluster/start-slurm.sh)")


@pytest.fixture
def slurm_env():
    """The environment of the drivers: the queue looked at every second rather than every ten."""
    return {**os.environ, "COMCO_SLURM_POLL_S": "1"}


