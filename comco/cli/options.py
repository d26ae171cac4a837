"""The options several verbs share, declared once (typer has no parameter groups): a verb
takes them as `name: Option = default`, so the same flag reads the same everywhere. The
planning options are built from their declarations (comco/plan/options.py) by
`with_plan_options`."""

from __future__ import annotations

import functools
import inspect
from pathlib import Path
from typing import Annotated, Callable, List, Optional

import typer

# plan and render (the planning options themselves come from their declarations: with_plan_options)
Singles = Annotated[bool, typer.Option("--singles", help="Also plan/render one reference image per object (for IOR).")]
Overwrite = Annotated[bool, typer.Option("--overwrite", help="Replace a dataset made with another configuration.")]
Resume = Annotated[bool, typer.Option("--resume", help="Continue a dataset with the same configuration.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]
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
