"""benchmarks/cycles_quality.py: its PSNR and SSIM against values known in closed form and
against a window-by-window SSIM written out the slow way; its knee rule; and a tiny run of the
script (a few samples at 32 px) that renders, compares, draws the figure and, run again, takes
every render from its cache."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "cycles_quality.py"
_spec = importlib.util.spec_from_file_location("cycles_quality", SCRIPT)
cq = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cq)


def slow_ssim(x: np.ndarray, y: np.ndarray, size: int = 11, sigma: float = 1.5, peak: float = 255.0) -> float:
    """Wang et al.'s SSIM, one window position at a time (weighted means, variances, covariance)."""
    ax = np.arange(size) - (size - 1) / 2
    w = np.exp(-(ax[:, None] ** 2 + ax[None, :] ** 2) / (2 * sigma**2))
    w /= w.sum()
    c1, c2 = (0.01 * peak) ** 2, (0.03 * peak) ** 2
    values = []
    for i in range(x.shape[0] - size + 1):
        for j in range(x.shape[1] - size + 1):
            a, b = x[i:i + size, j:j + size], y[i:i + size, j:j + size]
            ma, mb = (w * a).sum(), (w * b).sum()
            va, vb = (w * (a - ma) ** 2).sum(), (w * (b - mb) ** 2).sum()
            cov = (w * (a - ma) * (b - mb)).sum()
            values.append((2 * ma * mb + c1) * (2 * cov + c2) / ((ma**2 + mb**2 + c1) * (va + vb + c2)))
    return float(np.mean(values))


def test_identical_images_score_perfectly():
    img = np.random.default_rng(0).integers(0, 256, (40, 48, 3))
    assert cq.psnr(img, img) == math.inf
    assert cq.ssim(cq.luminance(img), cq.luminance(img)) == pytest.approx(1.0, abs=1e-12)


def test_psnr_of_a_known_noise_level():
    rng = np.random.default_rng(1)
    ref = np.full((400, 400, 3), 128.0)
    noisy = ref + rng.normal(0, 5.0, ref.shape)  # MSE 25 -> 20 log10(255 / 5) = 34.15 dB
    assert cq.psnr(noisy, ref) == pytest.approx(20 * math.log10(255 / 5), abs=0.05)
    assert cq.psnr(ref + 1.0, ref) == pytest.approx(20 * math.log10(255), abs=1e-9)  # MSE 1: 48.13 dB


def test_ssim_of_flat_images_is_the_luminance_term():
    # no variance anywhere: SSIM = (2 a b + C1) / (a^2 + b^2 + C1), C1 = (0.01 * 255)^2
    c1 = (0.01 * 255) ** 2
    assert cq.ssim(np.full((20, 20), 100.0), np.full((20, 20), 120.0)) == pytest.approx(
        (2 * 100 * 120 + c1) / (100**2 + 120**2 + c1), rel=1e-12)


def test_ssim_matches_the_window_by_window_definition():
    rng = np.random.default_rng(2)
    x = rng.uniform(0, 255, (23, 29))
    y = np.clip(x + rng.normal(0, 20, x.shape), 0, 255)
    got = cq.ssim(x, y)
    assert got == pytest.approx(slow_ssim(x, y), rel=1e-9)
    assert 0.3 < got < 0.99  # noisy, not unrelated
    assert cq.ssim(x, 255 - x) < 0  # inverted contrast: anti-correlated structure


def test_ssim_refuses_images_smaller_than_its_window():
    with pytest.raises(ValueError, match="11 px"):
        cq.ssim(np.zeros((10, 30)), np.zeros((10, 30)))


def test_the_knee_is_the_cheapest_setting_whose_worst_scene_reaches_the_threshold():
    def s(samples, denoise, cpu, worst):
        return {"resolution": 224, "samples": samples, "denoise": denoise, "cpu_s": cpu, "psnr_min": worst}

    summary = [s(8, False, 1.0, 30.0), s(64, False, 5.0, 36.0), s(16, True, 2.5, 35.5), s(8, True, 1.6, 34.9)]
    assert cq.knees(summary)[224] is summary[2]
    assert cq.knees(summary, threshold=40.0)[224] is None
    for row in summary:
        row.update(wall_s=1.0, psnr=row["psnr_min"], ssim=0.9, ssim_min=0.9)
    preset = cq.PRESET_DEFAULT[0]  # the cycles preset's own samples (comco.record.PRESET_SAMPLES)
    row = s(preset, True, 6.0, 47.0) | {"wall_s": 1, "psnr": 47, "ssim": 1, "ssim_min": 1}
    table = cq.markdown_table([*summary, row], cq.knees(summary))
    assert "| 224 | OIDN | 16 (knee) | 2.50 |" in table and f"| {preset} (cycles preset) |" in table
    assert table.count("(knee)") == 1


@pytest.mark.bpy
def test_a_tiny_run_renders_compares_and_draws(tmp_path):
    pytest.importorskip("bpy")
    fig, out = tmp_path / "curve.png", tmp_path / "rows.json"
    args = [sys.executable, str(SCRIPT), "--samples", "1,4", "--reference", "16", "--resolutions", "32:1",
            "--sets", "simco", "--realism", "plain", "--cache", str(tmp_path / "refs"),
            "--figure", str(fig), "--json", str(out)]
    r = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(out.read_text())
    assert [(row["samples"], row["denoise"]) for row in got["rows"]] == [(1, True), (1, False), (4, True), (4, False)]
    for row in got["rows"]:
        assert 5 < row["psnr"] < math.inf and -1 < row["ssim"] < 1 and row["cpu_s"] > 0
    assert fig.stat().st_size > 10_000
    assert len(list((tmp_path / "refs").glob("*.png"))) == 5  # the reference and the four test images
    # a rerun takes every render from the cache: the same seconds to the last bit, nothing new in it
    r = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(out.read_text())["rows"] == got["rows"]
    assert len(list((tmp_path / "refs").glob("*.png"))) == 5


def test_a_presets_default_samples_enter_the_dataset_hash_as_rendered():
    """The cycles preset's samples moved from 24 to the knee: a folder rendered with the old
    default must not share its configuration hash with one rendered with the new one."""
    from comco.record import PRESET_SAMPLES
    from comco.render import RenderOptions

    assert PRESET_SAMPLES["cycles"] == cq.PRESET_DEFAULT[0] == 4
    assert RenderOptions(preset="cycles").image_config()["samples"] == 4
    assert RenderOptions(preset="cycles", samples=24).image_config()["samples"] == 24
    assert RenderOptions(preset="high").image_config()["samples"] == 128
    assert RenderOptions(preset="draft").image_config()["samples"] is None  # Workbench takes none
