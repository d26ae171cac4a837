"""open_clip names: the newer families the pinned open_clip brings (PE-Core, MobileCLIP2, the
MetaCLIP 2 worldwide models) are names comco takes, and one loads with random weights."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.torch

ROOT = Path(__file__).resolve().parents[1]


def test_the_pin_admits_only_open_clip_versions_with_the_newer_families():
    import open_clip
    from packaging.version import Version

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (pin,) = [d for d in deps if d.startswith("open_clip_torch")]
    lower = Version(re.fullmatch(r"open_clip_torch>=([\d.]+)", pin).group(1))
    assert lower >= Version("3.2.0")  # 3.0 brought PE-Core, 3.1 the worldwide models, 3.2 MobileCLIP2
    assert Version(open_clip.__version__) >= lower


def test_the_newer_families_are_names_comco_takes():
    import open_clip

    from comco.models import list_models

    names = set(list_models())
    assert {"PE-Core-B-16", "PE-Core-L-14-336", "MobileCLIP2-S0", "MobileCLIP2-B", "ViT-H-14-worldwide",
            "ViT-bigG-14-worldwide"} <= names
    assert ("ViT-H-14-worldwide", "metaclip2_worldwide") in open_clip.list_pretrained()


def test_mobileclip2_loads_with_random_weights():
    import torch

    from comco.models import load_model

    loaded = load_model("MobileCLIP2-S0", "none")
    assert loaded.identity.startswith("open_clip/MobileCLIP2-S0/random") and loaded.context_length == 77
    with torch.inference_mode():
        text = loaded.encode_text(loaded.tokenize(["a cube", "a cone"]))
    assert text.shape == (2, 512) and torch.allclose(text.norm(dim=-1), torch.ones(2), atol=1e-5)
