"""--quiet means quiet: open_clip's root-logger warning about random weights never reaches
the user; comco says it once in its own words, and not at all under --quiet."""

import subprocess
import sys

import pytest

pytestmark = pytest.mark.torch

ARGS = ["probe", "--text-only", "--object-set", "simco", "--objects", "3", "--tuples", "18", "--model", "ViT-S-32",
        "--pretrained", "none", "--bootstrap", "10", "--no-cache", "--no-plots"]


def probe(out, *extra):
    return subprocess.run([sys.executable, "-m", "comco.cli", *ARGS, "--out", str(out), *extra],
                          capture_output=True, text=True)


def test_random_weights_are_said_once_in_comcos_words_and_quiet_is_silent(tmp_path):
    loud = probe(tmp_path / "a")
    assert loud.returncode == 0, loud.stderr[-2000:]
    assert "No pretrained weights loaded" not in loud.stderr + loud.stdout
    assert loud.stderr.count("has random weights") == 1
    quiet = probe(tmp_path / "b", "--quiet")
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout == ""
