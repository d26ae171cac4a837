"""`comco model export`: a model comco trained, written in the field's own formats.

- `hf`: a transformers `CLIPModel` folder (config.json, model.safetensors, the CLIP BPE
  tokenizer comco tokenises with, preprocessor_config.json), loaded with
  `CLIPModel.from_pretrained(DIR)` and `CLIPProcessor.from_pretrained(DIR)`;
- `open_clip`: the folder open_clip reads with its `local-dir:` schema
  (open_clip_config.json with `model_cfg` and `preprocess_cfg`, open_clip_model.safetensors),
  loaded with `open_clip.create_model_and_transforms("local-dir:DIR")` and
  `open_clip.get_tokenizer("local-dir:DIR")`.

Both give the embeddings comco computes (tests/test_model_export.py checks it). A LABCLIP map
is folded into the text projection, which is exact: comco's text feature is
normalise(normalise(x P) M^T) = normalise(x P M^T), since normalising is blind to scale.
What a format cannot hold (the conv image tower in CLIPModel, a bidirectional text tower
anywhere) is refused in one line before anything is written.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from comco.errors import UserError

FORMATS = ("hf", "open_clip")


# open_clip config keys CLIPModel has an exact counterpart for; any other key must keep
# open_clip's default, or the HF model would compute something else.
HF_VISION_KEYS = {"image_size", "patch_size", "width", "layers", "head_width", "mlp_ratio"}


HF_TEXT_KEYS = {"context_length", "vocab_size", "width", "heads", "layers", "mlp_ratio"}


def export_model(ref: str, fmt: str, out: str | Path) -> dict:
    """Write the comco checkpoint `ref` (`ckpt:PATH`) into the folder `out` in format `fmt`.

    Args:
        ref: `ckpt:PATH`, a checkpoint `comco train` wrote (scratch, longclip, debias, labclip).
        fmt: "hf" (a transformers CLIPModel folder) or "open_clip" (open_clip's local-dir folder).
        out: the folder to write; it must not exist yet, or be empty. It appears whole or not at all.

    Returns:
        A summary: `path`, `format`, `kind` (the checkpoint's), `folded_text_map` (LABCLIP),
        `context_length` and the files written.
    """
    from comco.io import require_folder
    from comco.models.checkpoints import build_open_clip, load_checkpoint, load_ckpt

    if fmt not in FORMATS:
        raise UserError(f"--to {fmt}: use one of {', '.join(FORMATS)}")
    prefix, _, rest = str(ref).partition(":")
    if prefix != "ckpt" or not rest:
        raise UserError(f"{ref}: export takes a checkpoint comco trained, as ckpt:PATH")
    out = Path(out)
    require_folder(out, "--out")
    if out.exists() and any(out.iterdir()):
        raise UserError(f"--out {out} exists and is not an empty folder: give a new folder")
    path = Path(rest).expanduser()
    ckpt = load_checkpoint(path)
    loaded = load_ckpt(path, "cpu")
    _, _, cfg = build_open_clip(ckpt["model_spec"], ckpt.get("context_length"))
    _check_exportable(ckpt["model_spec"], cfg, fmt)
    model = loaded.model.eval()
    state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    folded = loaded.text_map is not None
    if folded:  # x P -> x P M^T: the LABCLIP map becomes part of the text projection
        state["text_projection"] = (state["text_projection"].float() @ loaded.text_map.float().T.cpu()).contiguous()
    pre = ckpt["model_spec"].get("preprocess", {})
    mean, std = _preprocess_stats(pre)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    except OSError as exc:
        raise UserError(f"--out {out}: cannot write there ({exc.strerror}); give a folder you can write") from None
    try:
        if fmt == "hf":
            _write_hf(tmp, cfg, state, mean, std)
        else:
            _write_open_clip(tmp, cfg, state, mean, std)
        if out.exists():
            out.rmdir()
        tmp.rename(out)  # the folder appears whole
    except OSError as exc:  # a full disk, a read-only folder: nothing half-written stays
        raise UserError(f"--out {out}: writing failed ({exc.strerror}); free space or give another folder") from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return {"path": str(out), "format": fmt, "kind": ckpt["kind"], "folded_text_map": folded,
            "context_length": int(cfg["text_cfg"].get("context_length", 77)),
            "files": sorted(p.name for p in out.iterdir())}


def _preprocess_stats(pre: dict) -> tuple[list[float], list[float]]:
    from comco.models.loaded import OPENAI_MEAN, OPENAI_STD

    return [float(x) for x in pre.get("mean", OPENAI_MEAN)], [float(x) for x in pre.get("std", OPENAI_STD)]


def _check_exportable(spec: dict, cfg: dict, fmt: str) -> None:
    """UserError naming what `fmt` cannot express, before anything is written."""
    if spec.get("text_tower"):
        raise UserError(f"this model's text tower attends both ways ({spec['text_tower'].get('attention')}, "
                        f"{spec['text_tower'].get('pool')} pooling): neither transformers' CLIPModel nor open_clip "
                        "has that tower, so it is not exported")
    text = cfg.get("text_cfg", {})
    if "hf_model_name" in text or cfg.get("custom_text"):
        raise UserError(f"this model's text tower is a Hugging Face model ({text.get('hf_model_name')}): "
                        "export covers CLIP's own text transformer only")
    if fmt == "open_clip":
        return
    vision = cfg.get("vision_cfg", {})
    if isinstance(vision.get("layers"), (list, tuple)):
        raise UserError("the conv image tower (open_clip's ModifiedResNet) has no transformers CLIPModel "
                        "counterpart: export it with --to open_clip")
    if "init_logit_bias" in cfg:
        raise UserError("this model has a sigmoid-loss logit bias, which CLIPModel has no place for: "
                        "export it with --to open_clip")
    _defaults_only("vision_cfg", vision, HF_VISION_KEYS, "CLIPVisionCfg")
    _defaults_only("text_cfg", text, HF_TEXT_KEYS, "CLIPTextCfg")
    extra = set(cfg) - {"embed_dim", "quick_gelu", "vision_cfg", "text_cfg"}
    if extra:
        raise UserError(f"open_clip_cfg.{sorted(extra)[0]} has no transformers CLIPModel counterpart: "
                        "export with --to open_clip")


def _defaults_only(where: str, part: dict, mapped: set[str], cls_name: str) -> None:
    import dataclasses

    import open_clip.model as oc

    defaults = {f.name: f.default for f in dataclasses.fields(getattr(oc, cls_name))}
    for key, value in part.items():
        if key in mapped:
            continue
        if key not in defaults or defaults[key] != value:
            raise UserError(f"open_clip_cfg.{where}.{key} = {value!r} has no transformers CLIPModel "
                            "counterpart: export with --to open_clip")


def _write_open_clip(folder: Path, cfg: dict, state: dict, mean: list[float], std: list[float]) -> None:
    from safetensors.torch import save_file

    config = {"model_cfg": cfg, "preprocess_cfg": {"mean": mean, "std": std, "interpolation": "bicubic",
                                                    "resize_mode": "shortest"}}
    (folder / "open_clip_config.json").write_text(json.dumps(config, indent=2) + "\n")
    save_file(state, str(folder / "open_clip_model.safetensors"))


def hf_state_dict(state: dict, layers: tuple[int, int]) -> dict:
    """open_clip CLIP tensors under transformers CLIPModel's names (q, k, v split from in_proj)."""
    out = {
        "logit_scale": state["logit_scale"].reshape(()),
        "text_model.embeddings.token_embedding.weight": state["token_embedding.weight"],
        "text_model.embeddings.position_embedding.weight": state["positional_embedding"],
        "text_model.final_layer_norm.weight": state["ln_final.weight"],
        "text_model.final_layer_norm.bias": state["ln_final.bias"],
        "text_projection.weight": state["text_projection"].T,
        "vision_model.embeddings.class_embedding": state["visual.class_embedding"],
        "vision_model.embeddings.patch_embedding.weight": state["visual.conv1.weight"],
        "vision_model.embeddings.position_embedding.weight": state["visual.positional_embedding"],
        "vision_model.pre_layrnorm.weight": state["visual.ln_pre.weight"],  # sic: transformers' spelling
        "vision_model.pre_layrnorm.bias": state["visual.ln_pre.bias"],
        "vision_model.post_layernorm.weight": state["visual.ln_post.weight"],
        "vision_model.post_layernorm.bias": state["visual.ln_post.bias"],
        "visual_projection.weight": state["visual.proj"].T,
    }
    towers = (("transformer", "text_model", layers[1]), ("visual.transformer", "vision_model", layers[0]))
    for src, dst, count in towers:
        for i in range(count):
            a, b = f"{src}.resblocks.{i}.", f"{dst}.encoder.layers.{i}."
            for name in ("weight", "bias"):
                q, k, v = state[f"{a}attn.in_proj_{name}"].chunk(3, dim=0)
                out.update({f"{b}self_attn.q_proj.{name}": q, f"{b}self_attn.k_proj.{name}": k,
                            f"{b}self_attn.v_proj.{name}": v,
                            f"{b}self_attn.out_proj.{name}": state[f"{a}attn.out_proj.{name}"],
                            f"{b}layer_norm1.{name}": state[f"{a}ln_1.{name}"],
                            f"{b}layer_norm2.{name}": state[f"{a}ln_2.{name}"],
                            f"{b}mlp.fc1.{name}": state[f"{a}mlp.c_fc.{name}"],
                            f"{b}mlp.fc2.{name}": state[f"{a}mlp.c_proj.{name}"]})
    return {k: v.contiguous() for k, v in out.items()}


def hf_config(cfg: dict):
    """The transformers CLIPConfig of an open_clip ViT CLIP config."""
    from transformers import CLIPConfig

    vision, text = cfg["vision_cfg"], cfg["text_cfg"]
    act = "quick_gelu" if cfg.get("quick_gelu") else "gelu"  # open_clip: nn.GELU unless quick_gelu
    v_width, t_width = int(vision.get("width", 768)), int(text.get("width", 512))
    image = vision.get("image_size", 224)
    patch = vision.get("patch_size", 16)
    if isinstance(image, (list, tuple)) or isinstance(patch, (list, tuple)):
        raise UserError("a non-square image or patch size has no transformers CLIPModel counterpart: "
                        "export with --to open_clip")
    text_config = {"vocab_size": int(text.get("vocab_size", 49408)), "hidden_size": t_width,
                   "intermediate_size": int(t_width * float(text.get("mlp_ratio", 4.0))),
                   "num_hidden_layers": int(text.get("layers", 12)), "num_attention_heads": int(text.get("heads", 8)),
                   "max_position_embeddings": int(text.get("context_length", 77)), "hidden_act": act,
                   "layer_norm_eps": 1e-5, "projection_dim": int(cfg["embed_dim"]),
                   "pad_token_id": 49407, "bos_token_id": 49406, "eos_token_id": 49407}
    vision_config = {"hidden_size": v_width, "intermediate_size": int(v_width * float(vision.get("mlp_ratio", 4.0))),
                     "num_hidden_layers": int(vision.get("layers", 12)),
                     "num_attention_heads": v_width // int(vision.get("head_width", 64)),
                     "image_size": int(image), "patch_size": int(patch), "hidden_act": act, "layer_norm_eps": 1e-5,
                     "projection_dim": int(cfg["embed_dim"])}
    return CLIPConfig(text_config=text_config, vision_config=vision_config, projection_dim=int(cfg["embed_dim"]))


def _write_hf(folder: Path, cfg: dict, state: dict, mean: list[float], std: list[float]) -> None:
    import torch
    from transformers import CLIPImageProcessor, CLIPModel, CLIPProcessor

    config = hf_config(cfg)
    with torch.device("meta"):
        shapes = CLIPModel(config).state_dict()
    tensors = hf_state_dict(state, (config.vision_config.num_hidden_layers, config.text_config.num_hidden_layers))
    wrong = [k for k in shapes if k not in tensors or tuple(tensors[k].shape) != tuple(shapes[k].shape)]
    wrong += [k for k in tensors if k not in shapes]
    if wrong:  # a mapping that misses a tensor is comco's bug, not the user's
        raise RuntimeError(f"open_clip -> CLIPModel mapping disagrees with transformers at {wrong[:3]}")
    model = CLIPModel(config)
    model.load_state_dict(tensors, strict=True)
    model.save_pretrained(folder, safe_serialization=True)
    size = int(config.vision_config.image_size)
    image_processor = CLIPImageProcessor(size={"shortest_edge": size}, crop_size={"height": size, "width": size},
                                         do_resize=True, do_center_crop=True, resample=3, do_rescale=True,
                                         rescale_factor=1 / 255, do_normalize=True, image_mean=mean, image_std=std,
                                         do_convert_rgb=True)
    tokenizer = hf_tokenizer(config)
    CLIPProcessor(image_processor=image_processor, tokenizer=tokenizer).save_pretrained(folder)
    # the files a CLIP folder on the Hub also holds, which transformers 4.x reads: the image
    # processor on its own, and the BPE as vocab.json + merges.txt
    image_processor.to_json_file(folder / "preprocessor_config.json")
    (folder / "vocab.json").write_text(json.dumps(tokenizer.get_vocab(), ensure_ascii=False) + "\n")
    merges = ["#version: 0.2"] + [" ".join(pair) for pair in _bpe_merges()]
    (folder / "merges.txt").write_text("\n".join(merges) + "\n")


def _bpe_merges() -> list[tuple[str, str]]:
    """open_clip's BPE merges, in rank order."""
    from open_clip.tokenizer import SimpleTokenizer

    ranks = SimpleTokenizer().bpe_ranks
    return sorted(ranks, key=ranks.get)


def hf_tokenizer(config):
    """transformers' CLIPTokenizer over open_clip's own BPE (the vocabulary and merges comco
    tokenises with), as long as the text tower.

    It pads with end-of-text where open_clip pads with 0: the text tower is causal and pools
    the first end-of-text token, so what follows it never reaches the embedding. ("!", id 0,
    cannot be the pad token: transformers would then split every "!" of a text out as padding.)"""
    from open_clip.tokenizer import SimpleTokenizer
    from transformers import CLIPTokenizer

    simple = SimpleTokenizer()
    # open_clip 3 spells the special tokens <start_of_text>, <end_of_text>; CLIP's BPE files, <|...|>
    names = {"<start_of_text>": "<|startoftext|>", "<end_of_text>": "<|endoftext|>"}
    vocab = {names.get(token, token): index for token, index in simple.encoder.items()}
    return CLIPTokenizer(vocab=vocab, merges=[tuple(m) for m in _bpe_merges()],
                         model_max_length=int(config.text_config.max_position_embeddings))
