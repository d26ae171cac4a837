"""Beyond the training distribution: the scratch models' biases on held-out compositions
(data.holdout: the test scenes' mixed split, seen against held-out combinations) and on the
test scenes in another world (data.shift_world: the same scenes, only the world differs).

Per order bias p and bias index, the passing models' shares on both sides, means over seeds
with a t-interval, and the paired change (seed by seed). A bias *survives* where the shifted
side's interval lies above chance, and *moves* where the paired change excludes zero.
"""

from __future__ import annotations

from comco.lab.keys import SHIFT_ROLES, probe_key, scratch_key, shift_probe_key
from comco.lab.report.context import SetContext
from comco.lab.report.stats import metric, paired, pct, signed, summarize
from comco.lab.report.verdict import DOWN, UNKNOWN, UP, direction

# (name, probe family, role index): the first-mentioned object's TOR share, the largest object's IOR share
BIASES = (("first-mention bias", "tor", 0), ("large-object bias", "ior", 0))
SIDES = {"heldout": ("seen", "held-out"), "shifted": ("test world", "shifted world")}


def _share(res: dict | None, family: str, n: str, template: str, idx: int):
    m = metric(res or {}, family, n, template if family == "tor" else None)
    return None if m is None or idx >= len(m["share"]) else m["share"][idx]


def _sides(c: SetContext, role: str, p: float, passing: set) -> tuple[list, list]:
    """Per seed, the results on each side (None for a model below its gates)."""
    a, b = [], []
    for seed in c.seeds:
        model = scratch_key(c.oset, p, seed)
        if probe_key(model) not in passing:
            a.append(None)
            b.append(None)
            continue
        shifted = c.run.results(shift_probe_key(model, role))
        if role == "heldout":
            cells = shifted.get("cells", {})
            a.append(cells.get("seen"))
            b.append(cells.get("held-out"))
        else:
            a.append(c.run.results(probe_key(model)))
            b.append(shifted)
    return a, b


def survival(shifted: dict, change: dict, chance: float) -> str:
    """The sentence's verdict: does the bias survive on the shifted side, and does it move."""
    above = direction(None if shifted.get("lo") is None else shifted["lo"] - chance,
                      None if shifted.get("hi") is None else shifted["hi"] - chance)
    if above == UNKNOWN:
        if not shifted.get("n"):
            return "no passing seed: not measured, no verdict"
        return "one passing seed: no interval, no verdict"
    stays = {UP: "it survives (above chance)", DOWN: "it reverses (below chance)"}.get(
        above, "it is not distinguishable from chance")
    way = direction(change.get("lo"), change.get("hi"))
    if way == UNKNOWN:
        return f"{stays}; no paired change (a side without a passing seed's number)"
    moved = {UP: "larger than", DOWN: "smaller than"}.get(way)
    return f"{stays}, {moved + ' on the unshifted side' if moved else 'no change that the interval shows'}"


def shift_sections(c: SetContext, passing: set) -> dict:
    """The section (when the recipe asks for a shifted render) and its numbers."""
    roles = [r for r in SHIFT_ROLES if c.run.has(shift_probe_key(scratch_key(c.oset, c.ps[0], c.seeds[0]), r))]
    if not roles:
        return {}
    d = c.s["data"]
    n = str(max(d["test_objects"]))
    template = c.s["probe"]["tor_templates"][0]
    chance = 1 / int(n)
    numbers: dict = {}
    c.h(3, "Held-out compositions and the domain shift")
    what = []
    if "heldout" in roles:
        what.append(f"**held-out compositions**: the models trained on scenes that never show the combinations of "
                    f"`--holdout {d['holdout']}`; half the probe set's images (in turns, every object count on "
                    f"both sides) show one, the other half only seen ones (`comco probe --by holdout`)")
    if "shifted" in roles:
        what.append(f"**domain shift**: the models trained on the recipe's own world; the test scenes rendered again "
                    f"in `{d['shift_world']}` (the same objects, places and captions: only the world differs; TOR "
                    f"reads the captions alone, so the world cannot move the first-mention rows, which are the same "
                    f"on both sides by construction)")
    c.doc.p("; ".join(what) + f". Shares of the first-mentioned (TOR, template `{template}`) and the largest (IOR) "
            f"object among the {n}-object scenes, %, mean over the passing seeds with a t-interval; chance "
            f"{100 * chance:.0f} %. The change is the shifted side minus the other, paired by seed.")
    for role in roles:
        before, after = SIDES[role]
        rows, numbers[role] = [], {}
        for p in c.ps:
            a, b = _sides(c, role, p, passing)
            for name, family, idx in BIASES:
                va = [_share(r, family, n, template, idx) for r in a]
                vb = [_share(r, family, n, template, idx) for r in b]
                sa, sb, ch = summarize(va), summarize(vb), paired(vb, va)
                verdict = survival(sb, ch, chance)
                rows.append([f"{p:g}", name, pct(sa), pct(sb), signed(ch), verdict])
                numbers[role].setdefault(f"{p:g}", {})[name] = {before: sa, after: sb, "change": ch,
                                                                "verdict": verdict}
        c.doc.table(["p", "bias", f"{before} %", f"{after} %", "change", "does it survive?"], rows)
    return numbers
