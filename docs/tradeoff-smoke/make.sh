#!/usr/bin/env bash
# The trade-off table in docs/guide/eval.md: the models of a lab smoke run, side by side on
# benchmark fixtures made here. No natural data: the SugarCrepe- and Winoground-format fixtures
# are comco renders written by `comco export` in those formats, the retrieval set is the same
# renders (`--benchmark comco`, their long captions), and the zero-shot set is 240 one-object
# renders of the 18 simco shapes in one folder per shape.
#
#   bash docs/tradeoff-smoke/make.sh [WORK]      (WORK defaults to runs/tradeoff-smoke; ~10 min on 2 cores)
set -euo pipefail
W=${1:-runs/tradeoff-smoke}
mkdir -p "$W"
cd "$W"
comco lab run "$OLDPWD/recipes/order-bias.toml" --scale smoke --jobs 1 --quiet --out smoke
comco render --object-set simco --objects 3 --n 120 --pairs swap-size,swap-slots --preset draft --resolution 64 \
    --workers 1 --quiet --out pairs-render
comco render --object-set simco --objects 1 --n 240 --preset draft --resolution 64 --workers 1 --quiet \
    --out singles-render
for format in sugarcrepe winoground; do
    comco export pairs-render --to "$format" --out "fixtures/$format" --quiet
done
python3 - <<'PY'
import json, os
from pathlib import Path
root, out = Path("singles-render").resolve(), Path("fixtures/zeroshot")
for line in open(root / "scenes.jsonl"):  # one class folder per object name
    record = json.loads(line)
    folder = out / record["objects"][0]["name"]
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / Path(record["image"]).name
    if not link.exists():
        os.symlink(root / record["image"], link)
PY
printf 'a {}\na large {}\n' > fixtures/prompts.txt
MODELS=()
for f in smoke/stages/scratch-simco-*/model.pt smoke/stages/finetune-simco-*/model.pt \
         smoke/stages/probe-prior-simco-*/model.pt; do
    MODELS+=(--model "ckpt:$f")
done
common=("${MODELS[@]}" --device cpu --no-cache --quiet)
for b in sugarcrepe winoground; do
    comco eval compositional --benchmark "$b" --root "fixtures/$b" "${common[@]}" --out "eval/$b"
done
comco eval retrieval --benchmark comco --root pairs-render "${common[@]}" --out eval/retrieval
comco eval zeroshot --root fixtures/zeroshot --prompts fixtures/prompts.txt "${common[@]}" --out eval/zeroshot
comco eval tradeoff --lab smoke --results eval/sugarcrepe --results eval/winoground --results eval/retrieval \
    --results eval/zeroshot --out tradeoff
