"""Primary component matching (Long-CLIP): the short caption is matched to an image
feature that keeps only the batch's top principal components, so a short caption
is not asked to explain every detail of the image."""

from __future__ import annotations

import torch


def pca_reconstruct(features: torch.Tensor, rank: int = 32) -> torch.Tensor:
    """Reconstruct (N, D) features from their top-`rank` principal components in the batch.

    The basis is computed without gradient: differentiating an eigendecomposition is
    unstable when eigenvalues repeat (they do, N < D gives many zeros), while the
    projection itself stays differentiable in the features.
    """
    x = features.to(torch.promote_types(features.dtype, torch.float32))  # AMP halves -> fp32
    mean = x.mean(dim=0, keepdim=True)
    centred = x - mean
    with torch.no_grad():
        # right singular vectors of the centred batch = eigenvectors of its covariance
        _, _, vh = torch.linalg.svd(centred.detach(), full_matrices=False)
        basis = vh[:rank].T  # (D, rank)
    return (centred @ basis @ basis.T + mean).to(features.dtype)
