"""torchrun support: process group setup, rank helpers, gathering with gradients."""

from __future__ import annotations

import os

import torch
import torch.distributed as dist


def is_distributed() -> bool:
    return dist.is_available() and dist.is_initialized()


def rank() -> int:
    return dist.get_rank() if is_distributed() else 0


def world_size() -> int:
    return dist.get_world_size() if is_distributed() else 1


def is_main() -> bool:
    return rank() == 0


def setup(device: str) -> torch.device:
    """Join the process group when started by torchrun; returns this process's device."""
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ and int(os.environ["WORLD_SIZE"]) > 1:
        local_rank = int(os.environ.get("LOCAL_RANK", 0))
        use_cuda = device.startswith("cuda") and torch.cuda.is_available()
        if not is_distributed():
            dist.init_process_group("nccl" if use_cuda else "gloo")
        if use_cuda:
            torch.cuda.set_device(local_rank)
            return torch.device("cuda", local_rank)
        return torch.device("cpu")
    return torch.device(device)


def gather_with_grad(tensor: torch.Tensor) -> torch.Tensor:
    """Concatenate `tensor` from all ranks in rank order, keeping the autograd graph."""
    if not is_distributed() or world_size() == 1:
        return tensor
    from torch.distributed.nn.functional import all_gather

    return torch.cat(all_gather(tensor), dim=0)


def barrier() -> None:
    if is_distributed():
        dist.barrier()
