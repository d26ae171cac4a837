"""`hf:DIR` beyond CLIP and SigLIP: MetaCLIP 2 (transformers' MetaClip2Model), folders that
ship their own model code (only with --trust-remote-code), and the one line for a model
type comco does not read (tiny random models, offline tokenizers)."""

from __future__ import annotations

import json
import sys

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402
from support.natural import write_urban1k  # noqa: E402
from support.probes import HIDDEN, invoke, make_dataset, save_tokenizer  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from comco.errors import UserError  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("single_thread")]

TEXTS = ["a cube", "a photo of a cone, a torus and a sphere"]


def _towers(vocab: int, eos: int) -> dict:
    text = {"vocab_size": vocab, "hidden_size": HIDDEN, "intermediate_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 2, "max_position_embeddings": 64, "eos_token_id": eos, "pad_token_id": eos,
            "bos_token_id": eos}
    vision = {"hidden_size": HIDDEN, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
              "image_size": 32, "patch_size": 8}
    return {"text_config": text, "vision_config": vision, "projection_dim": 16}


def _features(out):
    return out if hasattr(out, "dim") else out.pooler_output


@pytest.fixture(scope="module")
def metaclip2(tmp_path_factory):
    from transformers import CLIPImageProcessor, MetaClip2Config, MetaClip2Model

    folder = tmp_path_factory.mktemp("metaclip2")
    vocab, eos = save_tokenizer(folder, 64)
    torch.manual_seed(0)
    model = MetaClip2Model(MetaClip2Config(**_towers(vocab, eos))).eval()
    model.save_pretrained(folder)
    CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}).save_pretrained(folder)
    return folder


def test_metaclip2_folder_features_equal_the_model_on_unpadded_text(metaclip2):
    from transformers import AutoTokenizer, MetaClip2Model

    from comco.models import load_model

    loaded = load_model(f"hf:{metaclip2}")
    assert loaded.family == "hf" and loaded.identity.startswith("hf/metaclip_2/") and loaded.context_length == 64
    tokens = loaded.tokenize(TEXTS)
    pixels = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    model = MetaClip2Model.from_pretrained(str(metaclip2)).eval()  # built again, independently
    tok = AutoTokenizer.from_pretrained(str(metaclip2))
    with torch.inference_mode():
        text, image = loaded.encode_text(tokens), loaded.encode_image(pixels)
        for row, caption in zip(text, TEXTS):  # each text alone, no padding: pooled at its end-of-text
            ids = tok([caption], return_tensors="pt")["input_ids"]
            assert ids.shape[1] < 64
            assert torch.allclose(row, F.normalize(_features(model.get_text_features(input_ids=ids)), dim=-1)[0],
                                  atol=1e-5)
        want = F.normalize(_features(model.get_image_features(pixel_values=pixels)), dim=-1)
    assert torch.allclose(image, want, atol=1e-5) and not torch.allclose(text[0], text[1])


def test_an_unsupported_model_type_names_the_supported_ones(tmp_path):
    from comco.models import load_model

    (tmp_path / "config.json").write_text('{"model_type": "bert"}')
    with pytest.raises(UserError) as err:
        load_model(f"hf:{tmp_path}")
    message = str(err.value)
    assert "'bert'" in message and "\n" not in message
    for name in ("clip (CLIPModel)", "siglip (SiglipModel)", "siglip2 (Siglip2Model)", "metaclip_2 (MetaClip2Model)",
                 "--trust-remote-code"):
        assert name in message


CONFIG_CODE = """from transformers import CLIPConfig


class TinyRemoteConfig(CLIPConfig):
    model_type = "tiny_remote_clip"
"""


MODEL_CODE = """from transformers import CLIPModel

from .configuration_tiny import TinyRemoteConfig


class TinyRemoteModel(CLIPModel):
    config_class = TinyRemoteConfig

    def get_text_features(self, input_ids=None, **kwargs):  # its own code runs: the features say so
        out = super().get_text_features(input_ids=input_ids, **kwargs)
        return (out if hasattr(out, "dim") else out.pooler_output).flip(-1)
"""


@pytest.fixture
def remote(tmp_path, monkeypatch):
    """A CLIP folder whose config.json points at model code shipped beside it (FG-CLIP style)."""
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, dynamic_module_utils

    monkeypatch.setattr(dynamic_module_utils, "HF_MODULES_CACHE", str(tmp_path / "modules"))
    monkeypatch.setattr(sys, "path", list(sys.path))
    folder = tmp_path / "remote"
    folder.mkdir()
    vocab, eos = save_tokenizer(folder, 64)
    torch.manual_seed(0)
    model = CLIPModel(CLIPConfig(**_towers(vocab, eos))).eval()
    model.save_pretrained(folder)
    CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}).save_pretrained(folder)
    (folder / "configuration_tiny.py").write_text(CONFIG_CODE)
    (folder / "modeling_tiny.py").write_text(MODEL_CODE)
    config = json.loads((folder / "config.json").read_text())
    config.update(model_type="tiny_remote_clip", architectures=["TinyRemoteModel"],
                  auto_map={"AutoConfig": "configuration_tiny.TinyRemoteConfig",
                            "AutoModel": "modeling_tiny.TinyRemoteModel"})
    (folder / "config.json").write_text(json.dumps(config))
    yield folder, model
    for name in [m for m in sys.modules if m.startswith("transformers_modules")]:
        del sys.modules[name]


def test_remote_code_runs_only_when_asked(remote):
    from comco.models import ModelRef, load_model, pair_models

    folder, plain = remote
    with pytest.raises(UserError, match=r"ships its own model code \(configuration_tiny.py, modeling_tiny.py\); "
                                        r"pass --trust-remote-code to run it"):
        load_model(f"hf:{folder}")
    (ref,) = pair_models([f"hf:{folder}"], [], trust_remote_code=True)
    assert ref == ModelRef(f"hf:{folder}", None, True)
    loaded = ref.load("cpu")
    assert type(loaded.model).__name__ == "TinyRemoteModel"
    tokens = loaded.tokenize(TEXTS)
    with torch.inference_mode():
        want = F.normalize(_features(plain.get_text_features(input_ids=tokens)).flip(-1), dim=-1)
        assert torch.allclose(loaded.encode_text(tokens), want, atol=1e-5)


def test_a_known_model_type_with_its_own_code_still_needs_the_flag(remote):
    from comco.models import load_model

    folder, _ = remote
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "model_type": "clip"}))  # as FG-CLIP's says
    with pytest.raises(UserError, match="pass --trust-remote-code"):
        load_model(f"hf:{folder}")


def test_probe_and_eval_take_the_flag(remote, tmp_path):
    from comco.cli.eval import app as eval_app

    folder, _ = remote
    data = make_dataset(tmp_path / "ds", n=2, objects=(3,))
    common = ["--probes", "tor", "--templates", "and", "--bootstrap", "0", "--no-cache", "--no-plots", "--quiet"]
    r = invoke(data, "--model", f"hf:{folder}", *common, "--out", tmp_path / "p1")
    assert isinstance(r.exception, UserError) and "--trust-remote-code" in str(r.exception)
    r = invoke(data, "--model", f"hf:{folder}", "--trust-remote-code", *common, "--out", tmp_path / "p2")
    assert r.exit_code == 0, r.output + repr(r.exception)

    root = write_urban1k(tmp_path / "urban1k")
    args = ["retrieval", "--benchmark", "urban1k", "--root", root, "--model", f"hf:{folder}", "--device", "cpu",
            "--no-cache", "--quiet"]
    r = CliRunner().invoke(eval_app, [*map(str, args), "--out", str(tmp_path / "e1")])
    assert r.exit_code == 2 and "--trust-remote-code" in r.output and len(r.output.strip().splitlines()) == 1
    r = CliRunner().invoke(eval_app, [*map(str, args), "--trust-remote-code", "--out", str(tmp_path / "e2")])
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "e2" / "results.json").read_text())["models"][0]["result"]["n_images"] == 3
