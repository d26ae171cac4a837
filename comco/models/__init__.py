"""The one model factory: open_clip names and weights, transformers folders (`hf:DIR`),
sentence encoders (`st:DIR`), generative VLMs (`vlm:DIR`, ModelRef.load),
comco's own checkpoints (`ckpt:PATH`) and the papers' release files (`longclip:PATH`,
`debias:PATH`), all behind `load_model`. torch loads on first use."""

from comco.lazy import door

__getattr__, __dir__, __all__ = door(__name__, {
    "LoadedModel": "loaded", "load_model": "factory", "list_models": "openclip",
    "ModelRef": "ref", "pair_models": "ref", "save_checkpoint": "checkpoints", "load_checkpoint": "checkpoints",
    "build_open_clip": "checkpoints", "check_device": "factory",
    "default_device": "factory", "SELF_CONTAINED": "ref",
    "LoadedVLM": "vlm", "load_vlm": "vlm", "VLM_PROBES_HINT": "vlm",
    "padding_is_inert": "openclip", "encode_text_trimmed": "openclip", "text_tower_spec": "text_towers",
    "export_model": "export",
})
