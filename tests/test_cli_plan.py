"""`comco plan` and `comco validate` through the real console script: exit codes and one-line errors."""

import json
import subprocess
import sys

import pytest

COMCO = [sys.executable, "-m", "comco.cli"]


def run(*args, cwd=None):
    return subprocess.run([*COMCO, *map(str, args)], capture_output=True, text=True, cwd=cwd)


def test_help_is_fast_and_imports_neither_bpy_nor_torch():
    code = "import sys, comco, comco.cli.app; print('bpy' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.split()
    assert out == ["False", "False"]
    assert run("--help").returncode == 0


def test_plan_validate_roundtrip(tmp_path):
    out = tmp_path / "d"
    r = run("plan", "--objects", "2-5", "--n", "20", "--singles", "--quiet", "--out", out)
    assert r.returncode == 0, r.stderr
    assert len((out / "scenes.jsonl").read_text().splitlines()) == 20
    assert len((out / "singles" / "singles.jsonl").read_text().splitlines()) == 72
    assert run("validate", out).returncode == 0


def test_validate_rejects_a_tampered_dataset(tmp_path):
    out = tmp_path / "d"
    assert run("plan", "--n", "5", "--quiet", "--out", out).returncode == 0
    lines = (out / "scenes.jsonl").read_text().splitlines()
    rec = json.loads(lines[2])
    rec["mention_orders"][0] = [0, 0]
    rec["objects"][0]["name"] = "unicorn"
    lines[2] = json.dumps(rec)
    (out / "scenes.jsonl").write_text("\n".join(lines) + "\n")
    r = run("validate", out)
    assert r.returncode == 1
    assert "record 000002" in r.stderr and "unicorn" in r.stderr and "permutation" in r.stderr


@pytest.mark.parametrize("args, message", [
    (["--objects", "5-2"], "backwards"),
    (["--objects", "0-3"], "start at 1"),
    (["--objects", "2-999"], "at most 5"),
    (["--objects", "abc"], "a count"),
    (["--n", "0"], "at least one image"),
    (["--n", "-3"], "at least one image"),
    (["--object-set", "nosuch"], "unknown object set"),
    (["--templates", "and,nosuch"], "unknown caption template"),
    (["--templates", "attributes"], "needs colours"),
    (["--resolution", "0"], "1..8192"),
    (["--resolution", "9000"], "1..8192"),
    (["--large-slot", "XX"], "--large-slot"),
    (["--large-fraction", "0.6"], "cannot place"),
])
def test_bad_input_exits_2_with_one_line_and_writes_nothing(tmp_path, args, message):
    out = tmp_path / "d"
    r = run("plan", "--n", "4", "--quiet", *args, "--out", out)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in r.stderr
    assert not out.exists() or not any(out.iterdir())


def test_out_is_a_file(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    r = run("plan", "--n", "2", "--out", f)
    assert r.returncode == 2 and "is a file" in r.stderr


def test_other_configuration_needs_overwrite(tmp_path):
    out = tmp_path / "d"
    assert run("plan", "--n", "3", "--quiet", "--out", out).returncode == 0
    before = (out / "scenes.jsonl").read_bytes()
    r = run("plan", "--n", "3", "--seed", "9", "--quiet", "--out", out)
    assert r.returncode == 2 and "another configuration" in r.stderr
    assert (out / "scenes.jsonl").read_bytes() == before
    assert run("plan", "--n", "3", "--seed", "9", "--quiet", "--overwrite", "--out", out).returncode == 0
    assert (out / "scenes.jsonl").read_bytes() != before


def test_too_many_objects_for_a_user_set(tmp_path):
    s = tmp_path / "set"
    s.mkdir()
    (s / "objects.toml").write_text(
        'name = "two"\n' + "".join(
            f'[[objects]]\nname = "{n}"\nplural = "{n}s"\narticle = "a"\ndimensions_m = [1, 1, 1]\n'
            f'size_class = "medium"\ncolorable = true\nsource = "builder:simco.cube"\n' for n in ("p", "q")))
    r = run("plan", "--n", "2", "--objects", "3", "--object-set", s, "--out", tmp_path / "d")
    assert r.returncode == 2 and "has 2" in r.stderr


def test_manifest_errors_are_one_line(tmp_path):
    s = tmp_path / "set"
    s.mkdir()
    (s / "objects.toml").write_text('name = "x"\nbogus = 1\n[[objects]]\nname = "a"\n')
    r = run("plan", "--n", "2", "--object-set", s, "--out", tmp_path / "d")
    assert r.returncode == 2 and "unknown key 'bogus'" in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("args, message", [
    (["--resolution", "8"], "--resolution takes 32..1024"),
    (["--turns", "0"], "--turns at least 1"),
])
def test_calibrate_bad_input_is_one_line(tmp_path, args, message):
    r = run("objects", "calibrate", "simco", *args)
    assert r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1
