"""The options several verbs share, declared once (typer has no parameter groups): a verb
takes them as `name: Option = default`, so the same flag reads the same everywhere."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, List, Optional

import typer

# plan and render
Objects = Annotated[str, typer.Option("--objects", help="Objects per image: a count (3), a range (2-5) or a list (2,4).")]
N = Annotated[int, typer.Option("--n", help="Number of images.")]
ObjectSet = Annotated[str, typer.Option("--object-set", help="Built-in set (comco, simco) or a folder with objects.toml.")]
Layout = Annotated[str, typer.Option(help="one-large (ComCO), equal, graded or realistic.")]
LargeSlot = Annotated[str, typer.Option("--large-slot", help="Slot of the largest object: M, UL, UR, BL, BR, a list (M,UL,BR) or random.")]
Seed = Annotated[int, typer.Option(help="Dataset seed; each image derives its own from it.")]
Resolution = Annotated[str, typer.Option(help="Image size in pixels: 512 or 640x480.")]
Colors = Annotated[bool, typer.Option("--colors/--no-colors", help="Give objects palette colours (and write attribute captions).")]
Orders = Annotated[int, typer.Option(help="Mention orders per image for 4+ objects (all permutations for 3 or fewer).")]
OrderPolicy = Annotated[str, typer.Option("--order-policy", help="random, size-desc, size-asc or left-to-right.")]
OrderBias = Annotated[float, typer.Option("--order-bias", help="Probability that the largest object is mentioned first (lab variable).")]
LargeFraction = Annotated[float, typer.Option("--large-fraction", help="Image share of the large object (one-large).")]
SmallFraction = Annotated[str, typer.Option("--small-fraction", help="Image share range of small objects, e.g. 0.005-0.01.")]
Captions = Annotated[str, typer.Option(help="Caption templates to write, comma-separated (default: all that apply).")]
Templates = Annotated[Optional[Path], typer.Option(help="A TOML file of extra caption templates.")]
Pairs = Annotated[Optional[str], typer.Option("--pairs", help="Counterfactual minimal pairs: per scene, one variant per factor (swap-size, swap-slots, swap-colors, remove, add, count), comma-separated.")]
Singles = Annotated[bool, typer.Option("--singles", help="Also plan/render one reference image per object (for IOR).")]
Overwrite = Annotated[bool, typer.Option("--overwrite", help="Replace a dataset made with another configuration.")]
Resume = Annotated[bool, typer.Option("--resume", help="Continue a dataset with the same configuration.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]
Out = Annotated[Path, typer.Option("--out", help="Output folder.")]

# the verbs that load models: probe, eval (None when not given: a list default would be shared)
Models = Annotated[Optional[List[str]], typer.Option("--model", "-m", help="open_clip name, hf:DIR, ckpt:PATH, longclip:PATH or debias:PATH; repeat to compare.")]
Pretrained = Annotated[Optional[List[str]], typer.Option("--pretrained", help="Tag, weights file or none; once for all open_clip models or once per --model.")]
Cache = Annotated[Optional[Path], typer.Option("--cache", help="Embedding cache folder (default ~/.cache/comco/embeddings).")]
NoCache = Annotated[bool, typer.Option("--no-cache", help="Do not read or write the embedding cache.")]
TrustRemoteCode = Annotated[bool, typer.Option("--trust-remote-code", help="Let an hf:DIR folder run the model code it ships (FG-CLIP style); never by default.")]
BatchSize = Annotated[int, typer.Option("--batch-size", min=1, help="Encoder batch size.")]
