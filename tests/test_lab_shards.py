"""render.shard_images: a large render becomes shard stages and a merge under its own id."""

from __future__ import annotations

from pathlib import Path

import pytest

from comco.errors import UserError
from comco.lab.graph import build_stages
from comco.lab.recipe import parse_recipe

RECIPE = Path(__file__).resolve().parent.parent / "recipes" / "order-bias.toml"


def sharded(per: int | str, scale: str = "smoke"):
    text = RECIPE.read_text(encoding="utf-8")
    i = text.index("[scales.smoke.render]\n") + len("[scales.smoke.render]\n")
    return parse_recipe(text[:i] + f"shard_images = {per}\n" + text[i:], scale)


def test_a_render_above_shard_images_becomes_shards_and_a_merge_and_its_readers_stay():
    plain = {s.id: s for s in build_stages(parse_recipe(RECIPE.read_text(), "smoke"))}
    stages = build_stages(sharded(20))  # smoke: 48 training images -> 3 shards; 24 test images -> 2
    by_id = {s.id: s for s in stages}
    shards = [f"render-train-simco-shard-{i}-of-3" for i in range(3)]
    assert all(by_id[s].config["shard"] == [i, 3] and by_id[s].kind == "render" for i, s in enumerate(shards))
    merge = by_id["render-train-simco"]
    assert merge.config["shards"] == 3 and merge.deps == {f"shard{i}": s for i, s in enumerate(shards)}
    assert [s.id for s in stages].index("render-train-simco") > max([s.id for s in stages].index(x) for x in shards)
    assert by_id["render-test-simco-shard-1-of-2"].config["shard"] == [1, 2]
    # the readers of a render read its merge, as before; their hashes change with their input's
    assert by_id["captions-simco-p0"].deps == plain["captions-simco-p0"].deps
    assert by_id["captions-simco-p0"].hash != plain["captions-simco-p0"].hash
    # below the threshold nothing changes
    small = {s.id: s.hash for s in build_stages(sharded(1000)) if s.kind != "report"}  # the report holds the recipe
    assert small == {k: v.hash for k, v in plain.items() if v.kind != "report"}


def test_shard_images_of_zero_is_one_line():
    with pytest.raises(UserError, match=r"'scales.smoke.render.shard_images' = 0.*at least 1") as err:
        sharded(0)
    assert "\n" not in str(err.value)
    with pytest.raises(UserError, match="render.shard_images"):
        sharded('"many"')
