"""Planted answers for the linear probes (TOC, IOC) and the attention probe.

TOC/IOC: embeddings in which the object at one position / slot is linearly decodable
and every other position is noise; the probe must find the one and report chance for
the rest, on a split that keeps each image's captions on one side.

Attention: a tiny open_clip ViT whose last-layer class-token attention is replaced by
a known map; the reported mass per size rank and its ratio to the area share are
checked against box coverage computed independently, by pushing a box mask through
the model's own preprocessing, for square and non-square inputs and resize modes.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from support.probes import SET, FakeEmbedder, planned_data

from comco.probes.linear import in_test, ioc, toc
from comco.probes.words import mention_sequence

NAMES = list(SET.names)


def keyed_noise(key: str, dim: int) -> np.ndarray:
    rng = np.random.default_rng(int(hashlib.sha256(key.encode()).hexdigest()[:8], 16))
    return rng.normal(size=dim)


def name_code(name: str) -> np.ndarray:
    v = np.zeros(len(NAMES))
    v[NAMES.index(name)] = 1.0
    return v


def by_role(rows):
    return {s["role"]: s for s in rows}


# ---------------------------------------------------------------- TOC


def test_toc_decodes_the_planted_position_and_only_that_one():
    """Caption embedding = the 2nd-mentioned object's code + noise: 2nd ~ 100 %, the others ~ chance."""
    data = planned_data(n=60, objects=(4,))

    def embed(caption):
        second = mention_sequence(caption, NAMES)[1]
        return np.concatenate([3 * name_code(second), keyed_noise(caption, 24)])

    (g,) = toc(data, FakeEmbedder(embed), "and", test_fraction=0.3, n_boot=200, seed=0)
    rows = by_role(g["metrics"]["held-out accuracy"])
    assert list(rows) == ["1st", "2nd", "3rd", "4th"]
    assert rows["2nd"]["acc"] > 0.95 and rows["2nd"]["lo"] > 0.9
    for role in ("1st", "3rd", "4th"):
        s = rows[role]
        assert s["acc"] < 0.2 and s["chance"] < 0.2, (role, s)  # 18 names: chance is ~ 1/18 .. 1/10
        assert s["lo"] <= max(s["chance"], 1 / len(NAMES)) + 0.05
    # held out by image: every caption of a test image is tested, no caption of a train image is
    test_ids = {r["id"] for r in data.records if in_test(r["id"], 0, 0.3)}
    assert 0 < len(test_ids) < len(data.records)
    n_test = sum(len(r["mention_orders"]) for r in data.records if r["id"] in test_ids)
    assert all(s["n"] == n_test and s["clusters"] == len(test_ids) for s in rows.values())


def test_toc_cannot_memorise_an_image_across_the_split():
    """Noise keyed by (image, first object): its captions share it in pairs. Split by caption,
    a probe would recognise the twin of a test caption; split by image it must be at chance."""
    data = planned_data(n=70, objects=(3,))
    seen = set()  # keep one image per object set, so that a caption names its image
    data.records = [r for r in data.records if not (frozenset(r["captions"]["and"]) in seen
                                                     or seen.add(frozenset(r["captions"]["and"])))]
    owner = {c: r["id"] for r in data.records for c in r["captions"]["and"]}
    assert len(data.records) > 50

    def embed(caption):
        first = mention_sequence(caption, NAMES)[0]
        return keyed_noise(f"{owner[caption]}:{first}", 512)

    (g,) = toc(data, FakeEmbedder(embed), "and", test_fraction=0.3, n_boot=0, seed=0)
    first = by_role(g["metrics"]["held-out accuracy"])["1st"]
    assert first["n"] > 30 and first["acc"] < 0.25, first


# ---------------------------------------------------------------- IOC


def test_ioc_decodes_the_planted_slot_and_only_that_one():
    """Image embedding = the code of the object in slot UL (zeros when empty) + noise."""
    # 18 classes: 320 images leave ~13 training examples per class, so an unlucky split
    # cannot leave a class unseen.
    data = planned_data(n=320, objects=(4,))
    by_path = {Path(r["image"]): r for r in data.records}

    def embed(path):
        rec = by_path[path]
        ul = next((o["name"] for o in rec["objects"] if o["slot"] == "UL"), None)
        code = 3 * name_code(ul) if ul else np.zeros(len(NAMES))
        return np.concatenate([code, keyed_noise(rec["id"], 24)])

    (g,) = ioc(data, FakeEmbedder(None, embed), test_fraction=0.3, n_boot=200, seed=0)
    rows = by_role(g["metrics"]["held-out accuracy"])
    assert set(rows) == {"M", "UL", "UR", "BL", "BR"}
    assert rows["UL"]["acc"] > 0.95 and rows["UL"]["lo"] > 0.85
    for slot in ("M", "UR", "BL", "BR"):
        assert rows[slot]["acc"] < 0.25, (slot, rows[slot])
    test_ids = {r["id"] for r in data.records if in_test(r["id"], 0, 0.3)}
    for slot, s in rows.items():
        assert s["n"] == sum(1 for r in data.records if r["id"] in test_ids
                             and any(o["slot"] == slot for o in r["objects"]))


# ---------------------------------------------------------------- attention


class PlantedAttention:
    """The last block's attention forward: the model's own output, planted weights.

    The probe recomputes the last block's attention with need_weights=True; that call
    gets the next maps from `queue` (one (L,) class-token row per image, in probe order).
    """

    def __init__(self, forward, queue):
        self.forward, self.queue = forward, queue

    def __call__(self, q, k, v, need_weights=False, **kw):
        import torch

        out = self.forward(q, k, v, need_weights=False, **kw)
        if not need_weights:
            return out
        b, length = q.shape[0], q.shape[1]  # open_clip ViTs are batch-first
        w = torch.full((b, length, length), 1.0 / length)
        w[:, 0] = torch.as_tensor(np.stack([self.queue.pop(0) for _ in range(b)]), dtype=w.dtype)
        return out[0], w


def tiny_vit_model(image_size, resize_mode):
    import open_clip
    from open_clip import SimpleTokenizer

    from comco.models.openclip import wrap_open_clip as _wrap_open_clip

    cfg = {"embed_dim": 16,
           "vision_cfg": {"image_size": image_size, "layers": 2, "width": 32, "patch_size": 4, "head_width": 16},
           "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1}}
    model = open_clip.CLIP(**cfg)
    preprocess = open_clip.image_transform(model.visual.image_size, is_train=False, resize_mode=resize_mode)
    loaded = _wrap_open_clip("tiny-vit", None, f"tiny-{resize_mode}", model, preprocess, SimpleTokenizer(), "cpu")
    assert loaded.vit is not None
    return loaded


def independent_coverage(loaded, resolution, bbox) -> np.ndarray:
    """(gh, gw) share of each patch inside the box: a box mask pushed through the model's preprocess."""
    from PIL import Image

    w, h = resolution
    mask = np.zeros((h, w, 3), np.uint8)
    mask[bbox[1]:bbox[3], bbox[0]:bbox[2]] = 255
    x = loaded.preprocess(Image.fromarray(mask))[0].numpy()  # channel 0, normalised
    lo = (0 - OPENAI_MEAN[0]) / OPENAI_STD[0]
    hi = (1 - OPENAI_MEAN[0]) / OPENAI_STD[0]
    m = np.clip((x - lo) / (hi - lo), 0, 1)
    gh, gw = loaded.vit.grid_size
    ph, pw = m.shape[0] // gh, m.shape[1] // gw
    return m[:gh * ph, :gw * pw].reshape(gh, ph, gw, pw).mean((1, 3))


OPENAI_MEAN = (0.48145466, 0.4578275, 0.40821073)
OPENAI_STD = (0.26862954, 0.26130258, 0.27577711)


def box_records(tmp_path, resolution, n=6):
    """Records with three non-overlapping boxes (large left, medium and small right) and noise images."""
    from PIL import Image

    from comco.probes.probe_data import ProbeData

    w, h = resolution
    rng = np.random.default_rng(1)
    recs = []
    for i in range(n):
        lw, lh = int(w * 0.42), int(h * 0.6)
        lx, ly = int(rng.integers(0, w // 2 - lw + 1)), int(rng.integers(0, h - lh + 1))
        mw, mh = int(w * 0.22), int(h * 0.3)
        mx, my = int(rng.integers(w // 2, w - mw + 1)), int(rng.integers(0, h // 2 - mh + 1))
        sw, sh = int(w * 0.12), int(h * 0.16)
        sx, sy = int(rng.integers(w // 2, w - sw + 1)), int(rng.integers(h // 2, h - sh + 1))
        boxes = [[sx, sy, sx + sw, sy + sh], [lx, ly, lx + lw, ly + lh], [mx, my, mx + mw, my + mh]]
        objects = [{"name": f"o{k}", "slot": "M", "size_rank": k,  # planned ranks wrong on purpose
                    "measured": {"pixels": (b[2] - b[0]) * (b[3] - b[1]), "bbox": b}} for k, b in enumerate(boxes)]
        rec = {"id": f"{i:06d}", "image": f"images/{i:06d}.png", "resolution": [w, h], "objects": objects}
        path = tmp_path / rec["image"]
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 255, (h, w, 3), dtype=np.uint8)).save(path)
        recs.append(rec)
    return ProbeData(root=tmp_path, info={}, records=recs, singles=[], names=[],
                     image_path=lambda r: tmp_path / r["image"])


@pytest.mark.torch
@pytest.mark.parametrize("image_size, resize_mode, resolution", [
    (32, "shortest", (80, 48)),        # resize the short side, centre-crop the long one
    ([32, 48], "shortest", (60, 60)),  # non-square input and 4 x 6 grid
    ([32, 48], "shortest", (64, 64 + 40)),
    (32, "squash", (96, 48)),          # squashed to square, nothing cropped
    ([48, 32], "longest", (64, 48)),   # fitted inside, padded
])
def test_attention_mass_per_size_rank_on_planted_maps(tmp_path, image_size, resize_mode, resolution):
    from comco.probes.attention import attention
    from comco.record import measured_ranks

    loaded = tiny_vit_model(image_size, resize_mode)
    data = box_records(tmp_path, resolution)
    gh, gw = loaded.vit.grid_size
    cov = [[independent_coverage(loaded, resolution, o["measured"]["bbox"]) for o in r["objects"]]
           for r in data.records]
    largest = [r["objects"][measured_ranks(r).index(0)] for r in data.records]
    assert all(o["measured"]["bbox"][0] < resolution[0] // 2 for o in largest)
    by_rank = [[c[measured_ranks(r).index(k)] for c, r in zip(cov, data.records)] for k in range(3)]
    area = [np.mean([c.mean() for c in by_rank[k]]) for k in range(3)]
    assert area[0] > area[1] > area[2] > 0

    uniform, focused = [], []
    for c in by_rank[0]:
        uniform.append(np.concatenate([[0.3], np.full(gh * gw, 0.7 / (gh * gw))]))
        inside = (c > 0.98).ravel()  # patches wholly inside the largest box
        assert inside.any()
        focused.append(np.concatenate([[0.4], 0.6 * inside / inside.sum()]))

    block = loaded.vit.transformer.resblocks[-1]
    for planted, want_mass in ((uniform, area), (focused, [1.0, 0.0, 0.0])):
        queue = list(planted)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(block.attn, "forward", PlantedAttention(block.attn.forward, queue))
            (g,) = attention(data, loaded, batch_size=4, n_boot=50, seed=0)
        assert not queue  # one map per image, consumed in probe order
        m = g["metrics"]
        assert [s["role"] for s in m["CLS attention mass in box"]] == ["largest", "2nd largest", "3rd largest"]
        mass = [s["mean"] for s in m["CLS attention mass in box"]]
        share = [s["mean"] for s in m["box area share (uniform attention)"]]
        ratio = [s["mean"] for s in m["mass / area"]]
        assert np.allclose(share, area, atol=0.02), (share, area)
        assert np.allclose(mass, want_mass, atol=0.03), (mass, want_mass)
        assert all(s["n"] == len(data.records) for s in m["CLS attention mass in box"])
        # a box cropped out of view (area 0) has mass 0 and no ratio, rather than a ratio of 0
        assert [s["n"] for s in m["mass / area"]] == [sum(c.sum() > 1e-3 for c in by_rank[k]) for k in range(3)]
        if planted is uniform:
            assert np.allclose(ratio, 1.0, atol=1e-6)
        else:
            want_ratio = np.mean([1.0 / c.mean() for c in by_rank[0]])
            assert ratio[0] == pytest.approx(want_ratio, rel=0.06) and ratio[0] > 1.5
            assert ratio[1] == pytest.approx(0.0, abs=0.05) and ratio[2] == pytest.approx(0.0, abs=0.05)
