#!/usr/bin/env bash
# omni in shell pipelines: lines in, one file per line and one JSON object per line out.
#   bash examples/pipeline.sh [OUT_DIR]
set -euo pipefail
out="${1:-pipeline-out}"

# each line is one utterance, started as soon as it arrives; up to -j lines run interleaved
printf 'The first line.\nA second, longer line of text.\nThird.\n' |
  omni speak - --out-dir "$out" --json -q --force > "$out.jsonl"
cat "$out.jsonl"

# a step timeline of one utterance, saved as JSON Lines and shown again from the file
omni speak "Show me every step." -q --force -o "$out/traced.wav" --trace "$out/trace.jsonl" > /dev/null
omni trace show "$out/trace.jsonl" | tail -n 5

# raw PCM to a pipe: 24 kHz mono s16le, here just counted
omni speak "To a pipe." -q -o - --format raw | wc -c
