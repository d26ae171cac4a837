"""Every `comco ... --help` reads whole at 80 columns, and an option name means one thing.

The app is walked, not listed: a new command or option is checked the day it is added.
"""

from __future__ import annotations

import re

import pytest
import typer
from typer.testing import CliRunner

from comco.cli.app import app
from comco.cli.options import MEANINGS, RENAMED

BOX = re.compile(r"[\s│╭╮╰╯─]")


def commands(cmd=None, path=()):
    """(path, click command) for every leaf command of the typer app."""
    cmd = cmd or typer.main.get_command(app)
    subs = getattr(cmd, "commands", None)
    if subs is None:
        yield path, cmd
        return
    for name, sub in subs.items():
        yield from commands(sub, path + (name,))


def options(cmd):
    return [p for p in cmd.params if type(p).__name__.endswith("Option") and not p.hidden]


def squeeze(text: str) -> str:
    """Text without whitespace and panel borders: rich wraps and folds, the words stay."""
    return BOX.sub("", text)


ALL = list(commands())


def test_the_walk_finds_every_verb():
    names = {" ".join(p) for p, _ in ALL}
    assert {"plan", "render", "probe", "lab run", "train scratch", "eval retrieval", "dataset sheet",
            "objects preview"} <= names


@pytest.mark.parametrize("path", [p for p, _ in ALL], ids=[" ".join(p) for p, _ in ALL])
def test_help_is_whole_at_80_columns(path):
    cmd = dict(ALL)[path]
    r = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "80", "TERMINAL_WIDTH": "80"})
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert max(len(line) for line in lines) <= 80, "wider than 80 columns"
    assert "…" not in r.output, "a cut word or list"
    shown = squeeze(r.output)
    for p in options(cmd):
        # markup is escaped in the help strings (\[run.slurm]); what is shown is the text itself
        text = squeeze((p.help or "").replace("\\[", "["))
        assert text in shown, f"{p.opts[0]}'s help lost text: {p.help!r}"
    assert squeeze((cmd.help or "").split("\n\n")[0]) in shown


def kind(p) -> str:
    if p.is_flag:
        return "flag"
    return "path" if "Path" in p.bare_type() else "value"


def test_no_option_name_has_two_meanings():
    uses: dict[str, list] = {}
    for path, cmd in ALL:
        for p in options(cmd):
            for flag in p.opts:
                uses.setdefault(flag, []).append((" ".join(path), kind(p), p.help or ""))
    # a name declared once (plan's options in plan and render, --quiet) has one help text: one meaning;
    # a name declared in several places must say its one meaning in MEANINGS, and read the same kind
    shared = {f: u for f, u in uses.items() if len({(k, h) for _, k, h in u}) > 1}
    for flag, u in shared.items():
        assert flag in MEANINGS, f"{flag} is used by {[c for c, _, _ in u]}: give it one meaning in MEANINGS"
        kinds = {k for _, k, _ in u}
        assert kinds == {MEANINGS[flag][0]}, f"{flag}: {u}"
    for flag in MEANINGS:
        assert flag in uses, f"MEANINGS names {flag}, which no command has"
    for path, cmd in ALL:  # --out is a folder, everywhere
        for p in options(cmd):
            if "--out" in p.opts:
                assert "folder" in p.help.lower() and "file" not in p.help.lower().replace("files", ""), \
                    (path, p.help)


def test_every_rename_names_a_new_flag_its_command_has():
    for r in RENAMED:
        cmd = dict(ALL)[tuple(r.verb.split())]
        flags = {f for p in options(cmd) for f in p.opts}
        assert r.new in flags, (r.verb, r.new)
        # an old spelling stays a flag of its command only when a value tells them apart (FILE.toml)
        assert r.old not in flags or r.when is not None, (r.verb, r.old)


def test_old_spellings_work_with_one_notice(tmp_path):
    """0.2's --captions (plan) and --templates FILE.toml keep working until 0.3, each with one line."""
    from comco.io import read_jsonl

    extra = tmp_path / "mine.toml"
    extra.write_text('[stack]\nobject = "{a} {name}"\njoin = " on "\ncaption = "{objects}, stacked"\n')
    new = CliRunner().invoke(app, ["plan", "--n", "3", "--objects", "2", "--templates", "and,stack",
                                   "--templates-file", str(extra), "--quiet", "--out", str(tmp_path / "new")])
    assert new.exit_code == 0, new.output
    old = CliRunner().invoke(app, ["plan", "--n", "3", "--objects", "2", "--captions", "and,stack",
                                   f"--templates={extra}", "--quiet", "--out", str(tmp_path / "old")])
    assert old.exit_code == 0, old.output
    notes = old.stderr.splitlines()
    assert notes == ["comco: --captions is now --templates (the old spelling works until comco 0.3)",
                     "comco: --templates FILE.toml is now --templates-file (the old spelling works until comco 0.3)"]
    assert not new.stderr
    same = [list(read_jsonl(tmp_path / d / "scenes.jsonl")) for d in ("new", "old")]
    assert same[0] == same[1] and set(same[0][0]["captions"]) == {"and", "stack"}


def test_rename_args_leaves_values_and_other_verbs_alone():
    from comco.cli.options import rename_args

    # a value that happens to read like an old flag, after --, or in another verb, stays
    assert rename_args(["--captions", "x.json", "--out", "o"], "captions stats") == ["--captions", "x.json",
                                                                                    "--out", "o"]
    assert rename_args(["--templates", "and,photo"], "plan") == ["--templates", "and,photo"]
    assert rename_args(["--", "--captions"], "plan") == ["--", "--captions"]
    assert rename_args(["--size", "32"], "objects show") == ["--resolution", "32"]


def test_the_cli_reference_lists_every_rename_and_meaning():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "reference" / "cli.md").read_text()
    table = text.split("## Renamed options", 1)[1]
    for r in RENAMED:
        assert f"`{r.old}" in table and f"`{r.new}" in table, (r.verb, r.old, r.new)
    for flag in MEANINGS:
        assert f"`{flag}`" in text, flag


@pytest.mark.parametrize("path", [(), ("objects",), ("dataset",), ("train",), ("eval",), ("lab",), ("captions",)],
                         ids=lambda p: " ".join(p) or "comco")
def test_group_help_is_whole_at_80_columns(path):
    r = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "80", "TERMINAL_WIDTH": "80"})
    assert r.exit_code == 0, r.output
    assert max(len(line) for line in r.output.splitlines()) <= 80 and "…" not in r.output
