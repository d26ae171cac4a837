"""The options several verbs share, declared once (typer has no parameter groups): a verb
takes them as `name: Option = default`, so the same flag reads the same everywhere. The
planning options are built from their declarations (comco/plan/options.py) by
`with_plan_options`."""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Callable, List, Optional

import typer

# plan and render (the planning options themselves come from their declarations: with_plan_options)
Singles = Annotated[bool, typer.Option("--singles", help="Also plan/render one reference image per object (for IOR).")]
Overwrite = Annotated[bool, typer.Option("--overwrite", help="Replace a dataset made with another configuration.")]
Resume = Annotated[bool, typer.Option("--resume", help="Continue a dataset with the same configuration.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or messages.")]
Out = Annotated[Path, typer.Option("--out", help="Output folder.")]

# the verbs that load models: probe, eval (None when not given: a list default would be shared)
Models = Annotated[Optional[List[str]], typer.Option("--model", "-m", help="open_clip name, hf:DIR, st:DIR, vlm:DIR, ckpt:PATH, longclip:PATH or debias:PATH; repeat to compare.")]
Pretrained = Annotated[Optional[List[str]], typer.Option("--pretrained", help="Tag, weights file or none; once for all open_clip models or once per --model.")]
Cache = Annotated[Optional[Path], typer.Option("--cache", help="Embedding cache folder (default ~/.cache/comco/embeddings).")]
NoCache = Annotated[bool, typer.Option("--no-cache", help="Do not read or write the embedding cache.")]
TrustRemoteCode = Annotated[bool, typer.Option("--trust-remote-code", help="Let an hf:DIR folder run the model code it ships (FG-CLIP style); never by default.")]
BatchSize = Annotated[int, typer.Option("--batch-size", min=1, help="Encoder batch size.")]


# ---------------------------------------------------------------- the planning options

PlanOptions = dict  # a verb's `plan_options: PlanOptions` parameter: the planning options, by name


def plan_parameters() -> list[inspect.Parameter]:
    """One typer option per declared planning option that has a help text, in declaration order."""
    from comco.plan import plan_options

    params = []
    for o in plan_options():
        if not o.on_cli:
            continue
        kind, default = o.cli()
        flags = o.flags or ("--" + o.name.replace("_", "-"),)
        params.append(inspect.Parameter(o.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default,
                                        annotation=Annotated[kind, typer.Option(*flags, help=o.help)]))
    return params


def with_plan_options(verb: Callable) -> Callable:
    """A verb that takes every planning option: its parameter `plan_options: PlanOptions` becomes
    one command-line option per declaration (in its place), and the verb receives their values
    as one dict under that name (for PlanConfig.from_dict)."""
    own = inspect.signature(verb, eval_str=True)
    planned = plan_parameters()
    names = [p.name for p in planned]
    params = []
    for p in own.parameters.values():
        params += planned if p.name == "plan_options" else [p]

    @functools.wraps(verb)
    def command(**given):
        return verb(plan_options={k: given.pop(k) for k in names}, **given)

    command.__signature__ = own.replace(parameters=params)
    command.__annotations__ = {p.name: p.annotation for p in params}
    return command


# ---------------------------------------------------------------- one meaning per name

# Every option name that more than one command takes, with its one meaning: (kind, meaning).
# kind is what the command line reads: "flag", "path" or "value". tests/test_cli_help.py
# walks the app and holds every command to this table.
MEANINGS: dict[str, tuple[str, str]] = {
    "--out": ("path", "the folder a command writes into (never a file)"),
    "--quiet": ("flag", "no progress bar and no messages on stdout"),
    "-q": ("flag", "the short form of --quiet"),
    "--overwrite": ("flag", "start again in a folder that holds other work"),
    "--resume": ("flag", "continue the work already in --out"),
    "--seed": ("value", "the one seed of everything random the command does"),
    "--device": ("value", "where models run: auto (cuda when there is one), cpu, cuda, cuda:N; "
                          "render: where Cycles runs (cpu, cuda, optix)"),
    "--model": ("value", "a model spec: open_clip name, hf:DIR, st:DIR, vlm:DIR, ckpt:PATH, ..."),
    "-m": ("value", "the short form of --model"),
    "--pretrained": ("value", "weights for an open_clip model: a tag, a file or none"),
    "--trust-remote-code": ("flag", "let an hf:DIR folder run its own model code"),
    "--cache": ("path", "the embedding cache folder"),
    "--no-cache": ("flag", "do not read or write the embedding cache"),
    "--batch-size": ("value", "images or texts per batch"),
    "--templates": ("value", "caption template names, comma-separated (and, articles, photo, long, ...)"),
    "--template": ("value", "one caption template name"),
    "--resolution": ("value", "an image's size in pixels"),
    "--tile": ("value", "a contact sheet's cell size in pixels"),
    "--limit": ("value", "only the first N (scenes, images or rows)"),
    "--objects": ("value", "objects per image or caption: 3, 2-5 or 2,4"),
    "--object-set": ("value", "a built-in object set or a folder with objects.toml"),
    "--preset": ("value", "a render preset: draft, cycles, high"),
    "--bootstrap": ("value", "bootstrap resamples for the 95 % intervals"),
    "--threads": ("value", "threads per worker, stage or process"),
    "--workers": ("value", "processes that do the work side by side"),
    "--executor": ("value", "where the work runs: local, node, slurm, slurm-local"),
    "--benchmark": ("value", "which benchmark eval reads: a retrieval one (coco, docci, ...) or a compositional "
                             "one (sugarcrepe, winoground, ...)"),
    "--root": ("path", "the folder eval reads a benchmark or image set from, laid out as it is distributed"),
    "--to": ("value", "the tool or library an export is written for (export: a dataset; model export: a model)"),
    "--lab": ("path", "a finished comco lab run's --out folder, read for its models' numbers"),
}

# The spellings of comco 0.2 that keep working, with a one-line notice, until UNTIL.
UNTIL = "0.3"


@dataclass(frozen=True)
class Renamed:
    """An option's old spelling in one command (`verb`: "plan", "train scratch") and its new one;
    `when` limits it to old values of that form (plan's --templates FILE.toml)."""

    verb: str
    old: str
    new: str
    when: Callable[[str], bool] | None = None


def _toml(value: str) -> bool:
    return value.lower().endswith(".toml")


RENAMED: list[Renamed] = [
    *(Renamed(v, "--captions", "--templates") for v in ("plan", "render", "train scratch")),
    *(Renamed(v, "--templates", "--templates-file", _toml) for v in ("plan", "render")),
    Renamed("export", "--captions", "--mention-orders"),
    Renamed("objects preview", "--size", "--tile"),
    Renamed("objects show", "--size", "--resolution"),
    *(Renamed(f"train {k}", "--resume", "--resume-from") for k in ("scratch", "longclip", "debias", "labclip")),
]


def deprecated(old: str, new: str) -> None:
    """The one-line notice (stderr) for an old spelling that still works until comco UNTIL."""
    typer.echo(f"comco: {old} is now {new} (the old spelling works until comco {UNTIL})", err=True)


def rename_args(args: list[str], verb: str) -> list[str]:
    """The arguments of `comco VERB ...` with the old spellings of RENAMED replaced (a notice each)."""
    table = [r for r in RENAMED if r.verb == verb]
    out, i = list(args), 0
    while i < len(out) and table:
        token = out[i]
        if token == "--":
            break
        flag, eq, value = token.partition("=")
        for r in table:
            if flag != r.old:
                continue
            given = value if eq else (out[i + 1] if i + 1 < len(out) else "")
            if r.when is not None and not r.when(given):
                continue
            out[i] = r.new + eq + value
            deprecated(r.old if r.when is None else f"{r.old} FILE.toml", r.new)
            break
        i += 1
    return out


def verb_of(group, args: list[str]) -> tuple[str, list[str]]:
    """The command path a `comco` argument list names ("train scratch") and the arguments after it."""
    path, i = [], 0
    while i < len(args) and hasattr(group, "commands") and args[i] in group.commands:
        group = group.commands[args[i]]
        path.append(args[i])
        i += 1
    return " ".join(path), args[i:]


# ---------------------------------------------------------------- help panels

# The panel each option's help appears in (rich help panels), by (verb, flag) or by flag alone.
PANEL_OUTPUT, PANEL_MODEL, PANEL_SCENE, PANEL_CAPTIONS, PANEL_REALISM = (
    "Output", "Model", "Scene plan", "Captions", "Realism factors")
PANELS: dict[str, str] = {
    **dict.fromkeys(("--out", "--overwrite", "--resume", "--resume-from", "--quiet", "--no-plots",
                     "--checkpoint-every", "--stop-after"), PANEL_OUTPUT),
    **dict.fromkeys(("--model", "--pretrained", "--init", "--trust-remote-code", "--device", "--batch-size",
                     "--cache", "--no-cache", "--list-models", "--precision"), PANEL_MODEL),
    **dict.fromkeys(("--templates", "--templates-file", "--template", "--text-template", "--pairs",
                     "--mention-orders", "--orders", "--order-policy", "--order-bias", "--colors"), PANEL_CAPTIONS),
    **dict.fromkeys(("--world", "--world-rotation", "--world-strength", "--floor", "--camera-elevation",
                     "--camera-azimuth", "--camera-lens", "--camera-distance", "--light-azimuth",
                     "--light-elevation", "--light-intensity", "--light-temperature", "--light-count",
                     "--roughness", "--metallic", "--texture", "--realism", "--floor-hue", "--floor-saturation",
                     "--floor-value"), PANEL_REALISM),
    **dict.fromkeys(("--objects", "--n", "--object-set", "--layout", "--large-slot", "--seed", "--resolution",
                     "--large-fraction", "--small-fraction", "--equal-fraction", "--holdout", "--holdout-split", "--singles",
                     "--depth", "--normals", "--relations"), PANEL_SCENE),
}
PANELS_BY_VERB: dict[str, dict[str, str]] = {
    "probe": {"--objects": "Text only", "--object-set": "Text only", "--text-only": "Text only",
              "--gallery": "Text only", "--tuples": "Text only", "--seed": "Statistics", "--bootstrap": "Statistics",
              "--test-fraction": "Statistics"},
    **{f"train {k}": {"--seed": "Optimiser", "--resolution": "Model"} for k in ("scratch", "longclip", "debias",
                                                                                "labclip")},
    "render": {"--device": "Rendering"},
    "objects calibrate": {"--resolution": "Options"},
    "objects show": {"--resolution": "Options"},
}
_TRAINING = ("--lr", "--weight-decay", "--warmup", "--label-smoothing", "--adam-betas", "--adam-eps", "--epochs",
             "--steps", "--accum", "--short-weight", "--long-weight", "--pca-rank")
PANELS.update(dict.fromkeys(_TRAINING, "Optimiser"))


# the panel of a verb's options that no table above places (None: typer's "Options")
VERB_PANEL = {"render": "Rendering", "probe": "Probes"}


def panel_of(verb: str, flag: str) -> str | None:
    """The help panel of an option of `comco VERB` (None: typer's "Options")."""
    return PANELS_BY_VERB.get(verb, {}).get(flag) or PANELS.get(flag) or VERB_PANEL.get(verb)


def prepare_help(group, path: tuple[str, ...] = ()) -> None:
    """Every command below `group`: each option in its panel (where its declaration names none), and
    every help text escaped for rich, so that brackets ([run.slurm], objects[i]) show as written."""
    from rich.markup import escape

    for name, sub in getattr(group, "commands", {}).items():
        here = path + (name,)
        if getattr(sub, "_comco_help", False):  # once per command object (escaping twice would show the escapes)
            continue
        sub._comco_help = True
        if sub.help:
            sub.help = escape(sub.help)
        if hasattr(sub, "commands"):
            prepare_help(sub, here)
            continue
        for p in sub.params:
            if getattr(p, "help", None):
                p.help = escape(p.help)
            if type(p).__name__.endswith("Option") and getattr(p, "rich_help_panel", None) is None:
                p.rich_help_panel = panel_of(" ".join(here), p.opts[0])


def _group_class():
    """The root group of `comco`: old spellings renamed (RENAMED) and help panels set (PANELS)
    before click parses, so every way in (the console script, CliRunner, `python -m comco`) gets both."""
    from typer.core import TyperGroup

    class ComcoGroup(TyperGroup):
        def main(self, args=None, *rest, **kw):
            import sys

            args = list(sys.argv[1:] if args is None else args)
            verb, tail = verb_of(self, args)
            args = args[:len(args) - len(tail)] + rename_args(tail, verb)
            prepare_help(self)
            return super().main(args, *rest, **kw)

    return ComcoGroup


ComcoGroup = _group_class()


def png_in(out: Path, name: str) -> Path:
    """The PNG a sheet command writes: `name` inside the folder --out. A --out that names a .png
    file (comco 0.2's form) still works until comco UNTIL, with the notice."""
    from comco.io import require_folder

    if out.suffix.lower() == ".png":
        deprecated("--out FILE.png", f"--out FOLDER (the file is FOLDER/{name})")
        require_folder(out.parent, "--out's folder")
        return out
    require_folder(out, "--out")
    return out / name


def opened(path: Path, quiet: bool = False) -> None:
    """The last line of a command that makes something to look at: the one file to open."""
    if not quiet:
        typer.echo(f"open {path}")
