"""`comco train ...` options reach the loop; importing the command stays light."""

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from comco.cli.train import app
from comco.errors import UserError

runner = CliRunner()


def test_importing_the_command_does_not_import_torch():
    code = "import sys, comco.cli.train; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("kind", ["scratch", "longclip", "debias", "labclip"])
def test_every_kind_has_help(kind):
    result = runner.invoke(app, [kind, "--help"])
    assert result.exit_code == 0 and "--out" in result.output


def test_debias_has_the_ablation_switches():
    import typer.main

    # the command's own options, not its rendered help (whose width the terminal decides)
    opts = {o for p in typer.main.get_command(app).commands["debias"].params for o in p.opts + p.secondary_opts}
    for flag in ("--no-remove-summary", "--no-sample", "--no-pad"):
        assert flag in opts
    # they parse (the run then stops at the first check, not at the option parser)
    result = runner.invoke(app, ["debias", "--data", "x", "--out", "y", "--no-remove-summary", "--no-sample",
                                 "--no-pad", "--batch-size", "0"])
    assert isinstance(result.exception, UserError), result.output


def test_batch_size_zero_is_a_user_error(tmp_path):
    result = runner.invoke(app, ["scratch", "--data", str(tmp_path), "--out", str(tmp_path / "o"), "--batch-size", "0"])
    assert isinstance(result.exception, UserError) and "--batch-size 0" in str(result.exception)


@pytest.mark.torch
@pytest.mark.usefixtures("single_thread")
def test_scratch_command_trains_and_reports(tiny_dataset, tmp_path):
    result = runner.invoke(app, ["scratch", "--data", str(tiny_dataset), "--out", str(tmp_path), "--steps", "2",
                                 "--batch-size", "12", "--resolution", "32", "--width", "32", "--layers", "1",
                                 "--context-length", "16", "--device", "cpu"])
    assert result.exit_code == 0, result.output
    assert "done at step 2/2" in result.output and (tmp_path / "model.pt").is_file()
