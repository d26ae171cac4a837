"""`vlm:DIR`: a local transformers image-text-to-text folder (LLaVA, Qwen2-VL, SmolVLM /
Idefics3, ...), loaded with AutoModelForImageTextToText and AutoProcessor. It generates text
instead of embedding it, so it has its own loaded type: greedy answers to a chat prompt about
an image, and the log-probability of a caption as the answer to that prompt. The probes that
use it (mention, likelihood matching) live in comco/probes; embedding probes refuse it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from comco.errors import UserError
from comco.io import folder_digest

FAMILY = "vlm"
VLM_PROBES_HINT = "vlm: models generate text; comco probe runs them with --probes mention,matching"


@dataclass
class LoadedVLM:
    """A generative VLM ready to answer (greedy) and to score captions."""

    name: str
    identity: str  # names the folder's files: what the answers came from
    model: Any
    processor: Any
    device: str
    context_length: int
    family: str = FAMILY

    def chat(self, prompt: str) -> str:
        """The prompt as the processor's chat template writes one user turn holding an image and
        `prompt`, ending where the assistant's answer begins."""
        messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt}]}]
        return self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)

    def _inputs(self, texts: list[str], images: list, side: str):
        tok = self.processor.tokenizer
        before, tok.padding_side = tok.padding_side, side
        try:
            batch = self.processor(text=texts, images=[[im] for im in images], padding=True, return_tensors="pt")
        finally:
            tok.padding_side = before
        return batch.to(self.device)

    def answer(self, images: list, prompt: str, max_new_tokens: int) -> list[str]:
        """Greedy answers (no sampling, one beam), one per image, to the same prompt. Images of
        one size get prompts of one length, so a batch of them needs no padding and each answer
        is what the image alone would get."""
        import torch

        text = self.chat(prompt)
        answers: list[str] = [""] * len(images)
        by_size: dict[tuple, list[int]] = {}
        for i, im in enumerate(images):
            by_size.setdefault(im.size, []).append(i)
        for idx in by_size.values():
            batch = self._inputs([text] * len(idx), [images[i] for i in idx], "left")
            with torch.no_grad():
                out = self.model.generate(**batch, do_sample=False, num_beams=1, max_new_tokens=max_new_tokens,
                                          temperature=None, top_p=None, top_k=None)
            new = out[:, batch["input_ids"].shape[1]:]
            for i, t in zip(idx, self.processor.batch_decode(new, skip_special_tokens=True)):
                answers[i] = t.strip()
        return answers

    def caption_logprobs(self, image, prompt: str, captions: list[str], batch_size: int) -> list[tuple[float, int]]:
        """(sum of log-probs, number of tokens) of each caption's tokens as the answer to `prompt`
        about `image`. The caption's tokens are those of chat(prompt) + caption past the prompt
        alone's tokens (where the two first differ, should the tokenizer merge across the seam);
        sequences are padded on the right, so a caption's score does not depend on its batch."""
        import torch

        text = self.chat(prompt)
        prefix = self._inputs([text], [image], "right")["input_ids"][0].tolist()
        out: list[tuple[float, int]] = []
        for start in range(0, len(captions), batch_size):
            chunk = captions[start:start + batch_size]
            batch = self._inputs([text + c for c in chunk], [image] * len(chunk), "right")
            ids, mask = batch["input_ids"], batch["attention_mask"]
            lengths = mask.sum(1).tolist()
            starts = [_common_prefix(prefix, row[:n]) for row, n in zip(ids.tolist(), lengths)]
            keep = ids.shape[1] - min(starts) + 1  # logits from the last prompt token on
            with torch.no_grad():
                try:
                    logits = self.model(**batch, logits_to_keep=keep).logits
                except TypeError:  # a model without logits_to_keep: every position
                    logits = self.model(**batch).logits
            logits = logits[:, -keep:].float().log_softmax(-1)
            offset = ids.shape[1] - keep  # logits[:, j] predicts token offset + j + 1
            for b, (s, n) in enumerate(zip(starts, lengths)):
                targets = ids[b, s:n]
                lp = logits[b, s - 1 - offset:n - 1 - offset].gather(-1, targets[:, None])
                out.append((float(lp.sum()), int(targets.numel())))
        return out


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return max(1, n)


def _config(path: Path) -> dict:
    import json

    if not path.is_dir():
        raise UserError(f"vlm:{path} is not a folder; give a folder a transformers VLM was saved to "
                        "(model.save_pretrained(DIR) and processor.save_pretrained(DIR))")
    if not (path / "config.json").is_file():
        other = " (it is a sentence-transformers folder: use st:DIR)" if (path / "modules.json").is_file() else ""
        raise UserError(f"vlm:{path} is not a transformers model folder (no config.json){other}")
    try:
        config = json.loads((path / "config.json").read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        config = None
    if not isinstance(config, dict):
        raise UserError(f"vlm:{path}: config.json is not a JSON object; the folder is damaged "
                        "(save the model again with save_pretrained(DIR))")
    return config


def _check_kind(path: Path, config: dict, trust_remote_code: bool) -> dict:
    """The folder holds an image-text-to-text model (or its own code, when the user allows it)."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES as KNOWN

    model_type = config.get("model_type")
    if isinstance(config.get("auto_map"), dict) and config["auto_map"]:
        if not trust_remote_code:
            raise UserError(f"vlm:{path} ships its own model code (auto_map in config.json); "
                            "pass --trust-remote-code to run it")
        return {"trust_remote_code": True}
    if model_type not in KNOWN:
        clip = " (a CLIP-like embeds: use hf:DIR)" if model_type in ("clip", "siglip", "siglip2", "metaclip_2") else ""
        raise UserError(f"vlm:{path} holds a '{model_type}' model, which is not an image-text-to-text model "
                        f"(AutoModelForImageTextToText loads e.g. llava, qwen2_vl, idefics3){clip}")
    return {}


def load_vlm(path: Path, device: str, trust_remote_code: bool = False) -> LoadedVLM:
    """The folder's model and processor, in eval mode on `device` (bfloat16 on CUDA, float32 on CPU)."""
    config = _config(path)
    remote = _check_kind(path, config, trust_remote_code)
    import torch
    import transformers

    from comco.models.hf import _read_weights, check_tokenizer

    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    model = _read_weights(path, transformers.AutoModelForImageTextToText, {"dtype": dtype, **remote})
    model = model.to(device).eval()
    try:
        processor = transformers.AutoProcessor.from_pretrained(str(path), local_files_only=True, **remote)
    except ImportError as exc:
        raise UserError(f"vlm:{path}: its processor needs a package that is not installed "
                        f"({(str(exc).splitlines() or [''])[0][:120]})") from None
    except Exception as exc:  # noqa: BLE001 - processors raise OSError, ValueError, KeyError, TypeError
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        raise UserError(f"vlm:{path}: its processor does not load ({first}); save it there "
                        "(processor.save_pretrained(DIR))") from None
    tok = getattr(processor, "tokenizer", None)
    if tok is None or not hasattr(processor, "image_processor"):
        raise UserError(f"vlm:{path}: its processor ({type(processor).__name__}) has no tokenizer and image "
                        "processor; save the model's AutoProcessor there")
    if not getattr(processor, "chat_template", None):
        raise UserError(f"vlm:{path}: its processor has no chat template (chat_template.jinja), so comco cannot "
                        "write the model's prompt; save the processor with its template")
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    positions = text.get("max_position_embeddings")
    context = positions if isinstance(positions, int) and 0 < positions <= 10**7 else 4096
    check_tokenizer(path, tok, context)
    vlm = LoadedVLM(name=f"vlm:{path}", identity=f"vlm/{config.get('model_type')}/{folder_digest(path)}",
                    model=model, processor=processor, device=device, context_length=context)
    _try_prompt(path, vlm)
    return vlm


def _try_prompt(path: Path, vlm: LoadedVLM) -> None:
    """Write one prompt with an image through the chat template and the processor, before any
    image is asked about: a template the sandbox blocks or that calls raise_exception, or an
    image size the processor cannot resize to (size -5), is one line here."""
    from PIL import Image

    try:
        vlm._inputs([vlm.chat("What is in the image?")], [Image.new("RGB", (32, 32))], "right")
    except Exception as exc:  # noqa: BLE001 - jinja2's SecurityError, TemplateError; ValueError, TypeError
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        raise UserError(f"vlm:{path}: its chat template or processor cannot write a prompt about an image "
                        f"({type(exc).__name__}: {first}); save the model's own processor there") from None
