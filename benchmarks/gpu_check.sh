#!/usr/bin/env bash
# The project's GPU check, for a machine lent a CUDA GPU (nothing depends on it; CI never runs it):
# the gpu tests, then pretraining and inference speed on CUDA, with one summary at the end.
#
#   bash benchmarks/gpu_check.sh [TEXT]     # TEXT: raw text for the pretraining benchmark (default:
#                                           # ../shared/data/raw/reuters21578.txt.gz, else text the
#                                           # quickstart generates from its templates)
# Needs the project installed with its test extra (and cupy for the spaCy-on-GPU tests).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${GPU_CHECK_OUT:-gpu_check}"
mkdir -p "$out"
text="${1:-../shared/data/raw/reuters21578.txt.gz}"
if [ ! -e "$text" ]; then
    text="$out/generated/train.txt"
    [ -e "$text" ] || python -c "import sys; sys.path.insert(0, 'examples'); from pathlib import Path; from quickstart import write_text; write_text(Path('$out/generated'), 20000, 500)"
fi
python -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'NO CUDA')"
python -m pytest -m gpu -q -rs tests/gpu 2>&1 | tee "$out/gpu_tests.txt"
tests=${PIPESTATUS[0]}
python benchmarks/pretrain_speed.py --presets small original --precision no bf16 --device cuda --text "$text" \
    --work "$out/work" --json "$out/pretrain_speed.json" 2>&1 | tee "$out/pretrain_speed.txt"
pretrain=${PIPESTATUS[0]}
python benchmarks/bilm_speed.py --device cuda --methods naive,ours --precision fp32 bf16 --sentences 512 \
    --batch-size 64 --json "$out/bilm_speed.json" 2>&1 | tee "$out/bilm_speed.txt"
infer=${PIPESTATUS[0]}
echo
echo "== GPU check summary =="
tail -n 1 "$out/gpu_tests.txt"
echo "gpu tests exit $tests, pretrain_speed exit $pretrain, bilm_speed exit $infer (figures in $out/)"
[ "$tests" -eq 0 ] && [ "$pretrain" -eq 0 ] && [ "$infer" -eq 0 ]
