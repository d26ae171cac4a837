"""A model as the user names it: `--model` and its `--pretrained`, one pairing rule and one
label for probe, eval, train and the lab (no torch here)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from comco.errors import UserError

SELF_CONTAINED = ("hf:", "ckpt:", "longclip:", "debias:", "st:", "vlm:")  # folders and files carry their weights
TEXT_ONLY = ("st:",)  # sentence encoders: no image tower
GENERATIVE = ("vlm:",)  # image-text-to-text models: they answer and score captions, they do not embed
# References that score a whole text (a generative VLM's caption likelihood) and give no text
# embedding: nothing to average per object (`probe --text-aggregate`).
NO_TEXT_EMBEDDINGS = GENERATIVE


@dataclass(frozen=True)
class ModelRef:
    """An open_clip name with its weights (a tag, a file or "none"), or `hf:DIR`, `ckpt:PATH`,
    `longclip:PATH`, `debias:PATH`, `st:DIR`, `vlm:DIR`; `trust_remote_code` lets an hf: folder run its own code."""
    name: str
    pretrained: str | None = None
    trust_remote_code: bool = False

    @property
    def label(self) -> str:
        """How tables and reports name the model: "ViT-B-32 (openai)", "hf:DIR", "ckpt:PATH"."""
        if self.name.startswith(SELF_CONTAINED):
            return self.name
        return f"{self.name} ({self.pretrained or 'none'})"

    @property
    def text_only(self) -> bool:
        """A text encoder without an image tower (`st:`): image probes, eval and training refuse it."""
        return self.name.startswith(TEXT_ONLY)

    @property
    def generative(self) -> bool:
        """A generative VLM (`vlm:`): only the probes that ask it questions or score captions run it."""
        return self.name.startswith(GENERATIVE)

    @property
    def embeds_phrases(self) -> bool:
        """Turns any text, a one-object phrase too, into one embedding (every CLIP tower and sentence encoder)."""
        return not self.name.startswith(NO_TEXT_EMBEDDINGS)

    @property
    def random(self) -> bool:
        """An open_clip architecture with random weights (seeded): the architecture's prior."""
        return not self.name.startswith(SELF_CONTAINED) and self.pretrained in (None, "", "none")

    def load(self, device: str = "cpu"):
        """The LoadedModel (comco.models.load_model), or for `vlm:` the LoadedVLM."""
        if self.generative:
            from comco.models.vlm import load_vlm

            return load_vlm(Path(self.name.partition(":")[2]).expanduser(), device, self.trust_remote_code)
        from comco.models.factory import load_model

        return load_model(self.name, self.pretrained, device, self.trust_remote_code)


def pair_models(models: list[str], pretrained: list[str], trust_remote_code: bool = False) -> list[ModelRef]:
    """Pair each `--model` with its `--pretrained`.

    Args:
        models: the `--model` values, in order.
        pretrained: none (random or self-contained weights), one for every open_clip model
            (the prefixed references keep their own), or one per model in order.
        trust_remote_code: `--trust-remote-code`, for every model.
    """
    if not models:
        raise UserError("give at least one --model (e.g. --model ViT-B-32 --pretrained openai); see --list-models")
    if len(pretrained) not in (0, 1, len(models)):
        raise UserError(f"{len(models)} --model and {len(pretrained)} --pretrained: give one --pretrained "
                        "for all models or one per --model")
    if len(pretrained) == len(models) and len(models) > 1:
        return [ModelRef(m, p, trust_remote_code) for m, p in zip(models, pretrained)]
    shared = pretrained[0] if pretrained else None
    return [ModelRef(m, None if m.startswith(SELF_CONTAINED) else shared, trust_remote_code) for m in models]
