"""Greedy parity with generate on the 7B shape, run by test_hf_realwidth_7b.py in a child process.

The 7B shape holds about 11 GB once loaded; in a child process it is gone when the check ends,
whatever the pytest process still holds. Prints one JSON object on stdout.

    python tests/hf/realwidth_7b_check.py CHECKPOINT_DIR CARDS_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # hf_cards, beside this file

import hf_cards  # noqa: E402

from omni_cli.api import load  # noqa: E402
from omni_cli.backends.hf.realwidth import ECHO_TEXT  # noqa: E402
from omni_cli.backends.hf.reference import GenerateReference  # noqa: E402
from omni_cli.engine import Engine  # noqa: E402
from omni_cli.spec.request import SpeakRequest  # noqa: E402

THINKER_MAX, TALKER_MAX = 12, 60


def main(checkpoint: str, cards: str) -> dict:
    card = hf_cards.greedy_card(Path(cards), "whole_7b", thinker_max=THINKER_MAX, talker_max=TALKER_MAX)
    program = load(str(card), settings={"model_path": checkpoint})
    thinker, talker = program.components["thinker"], program.components["talker"]
    ours = Engine(program).submit(SpeakRequest(ECHO_TEXT, mode="echo", voice="Chelsie"), collect=True).result()
    prompt = thinker.encode(ECHO_TEXT, "echo")
    reference = GenerateReference(checkpoint, sorted(talker.eos_token_ids), model=thinker.model)
    ref = reference.run(list(prompt.prefill_ids), voice="Chelsie", seed=0, thinker_max=THINKER_MAX,
                        talker_max=TALKER_MAX, forced=[*prompt.forced_ids, min(thinker.eos_token_ids)])
    text = json.loads((Path(checkpoint) / "config.json").read_text())["thinker_config"]["text_config"]
    return {
        "widths": [text[key] for key in ("vocab_size", "hidden_size", "num_attention_heads", "num_key_value_heads")],
        "thinker": [ours.tokens["thinker_decode"], ref.thinker_tokens],
        "talker": [ours.tokens["talker_decode"], ref.talker_tokens],
        "talker_ended_by_itself": ours.tokens["talker_decode"][-1] in talker.eos_token_ids,
        "num_samples": [int(ours.samples.size), int(ref.samples.size)],
        "samples_equal": bool(torch.equal(torch.from_numpy(ours.samples), torch.from_numpy(ref.samples))),
        "max_abs_diff": float(np.max(np.abs(ours.samples - ref.samples))) if ours.samples.size == ref.samples.size else None,
        "peak": float(np.max(np.abs(ref.samples))) if ref.samples.size else 0.0,
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])))
