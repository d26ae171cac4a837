"""Two processes (torchrun's environment, gloo on CPU) train exactly as one process
with the whole batch: the contrastive loss sees every rank's features, with gradients."""

import os
import socket

import pytest

torch = pytest.importorskip("torch")

from support.train import scratch_config  # noqa: E402

from comco.models import load_checkpoint  # noqa: E402

pytestmark = pytest.mark.torch


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, world: int, port: int, data: str, out: str) -> None:
    import torch.distributed as dist

    from comco.train.run import run_training

    os.environ.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": str(rank),
                       "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank)})
    torch.set_num_threads(1)
    try:
        run_training(scratch_config(data, out, steps=3, precision="fp32"))
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def test_two_processes_match_one(tiny_dataset, tmp_path):
    import torch.multiprocessing as mp

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        from comco.train.run import run_training

        # fp32 on both sides: this compares DDP with one process, not bf16 rounding (auto is bf16 on
        # CPUs with native bf16)
        run_training(scratch_config(tiny_dataset, tmp_path / "one", steps=3, precision="fp32"))
    finally:
        torch.set_num_threads(threads)
    mp.spawn(_worker, args=(2, _free_port(), str(tiny_dataset), str(tmp_path / "two")), nprocs=2, join=True)
    one = load_checkpoint(tmp_path / "one" / "model.pt")["state_dict"]
    two = load_checkpoint(tmp_path / "two" / "model.pt")["state_dict"]
    for key in one:
        assert torch.allclose(one[key], two[key], atol=2e-5), key
