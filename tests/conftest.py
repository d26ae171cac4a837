"""Fixtures the test files share (pytest finds them here; test files never import each
other: shared builders live in tests/support/)."""

from pathlib import Path

import pytest
from support.train import make_dataset


@pytest.fixture(scope="session")
def tiny_dataset(tmp_path_factory) -> Path:
    """A 24-image painted dataset with long captions (support.train.make_dataset)."""
    return make_dataset(tmp_path_factory.mktemp("comco-data"))


@pytest.fixture
def single_thread():
    """Two cores shared with other jobs: one torch thread avoids oversubscription stalls."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
