"""Issue 12: a card's weights count against its memory budget, refused from its params before any is drawn."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from omni_cli.program import check_program, compile_program, load_card_file, load_program_file
from omni_cli.program.backends import weight_bytes
from omni_cli.spec import SpecError

ROOT = Path(__file__).resolve().parent.parent
TOY = ROOT / "cards" / "qwen2_5_omni_toy.yaml"
SPEAK = ROOT / "programs" / "speak.yaml"

# each number within its bound, the product not: 1,024 wide, 16 layers, 262,144 positions in one head
HUGE = """components:
  thinker:
    backend: numpy
    role: thinker
    params: {d_model: 1024, num_layers: 16, num_heads: 1, max_positions: 65536}
  talker:
    backend: numpy
    role: talker
    params: {d_model: 1024, num_layers: 16, num_heads: 1, codebook_size: 8192, max_positions: 262144,
             min_codes_per_token: 3, max_codes_per_token: 8}"""


def card_with(tmp_path, budget_mib: int, components: str | None = None) -> Path:
    text = TOY.read_text()
    start, end = text.index("components:"), text.index("  vocoder:\n")
    if components is not None:
        text = text[:start] + components + "\n" + text[end:]
    text = text.replace("memory_budget_mib: 512", f"memory_budget_mib: {budget_mib}")
    path = tmp_path / "card.yaml"
    path.write_text(text)
    return path


def test_the_estimate_is_the_bytes_the_toy_components_draw():
    card = load_card_file(str(TOY))
    compiled = compile_program(card, load_program_file(str(SPEAK)))
    drawn = 0
    seen: set[int] = set()

    def count(value) -> None:  # every float32 array reachable from the components, each once
        nonlocal drawn
        if isinstance(value, np.ndarray) and value.dtype == np.float32 and id(value) not in seen:
            seen.add(id(value))
            drawn += value.nbytes
        elif isinstance(value, (list, tuple)):
            for v in value:
                count(v)
        elif isinstance(value, dict):
            for v in value.values():
                count(v)
        elif hasattr(value, "__dict__") and not isinstance(value, type):
            for v in vars(value).values():
                count(v)

    for component in compiled.components.values():
        count(vars(component))
    assert weight_bytes("numpy", card, check_program(card, load_program_file(str(SPEAK)))) == drawn


def test_a_card_whose_weights_exceed_its_budget_is_refused_before_drawing(tmp_path):
    path = card_with(tmp_path, 1024, HUGE)
    card = load_card_file(str(path))
    start = time.perf_counter()
    with pytest.raises(SpecError) as info:
        compile_program(card, load_program_file(str(SPEAK)))
    assert time.perf_counter() - start < 5  # nothing drawn: the real draw took a minute and 4.9 GB
    issue = info.value.issues[0]
    assert issue.file == str(path) and issue.key == "limits.memory_budget_mib" and issue.line is not None
    assert "weights take" in issue.message and "over the card's memory budget of 1024 MiB" in issue.message


def test_the_shipped_toy_card_fits_a_small_budget(tmp_path):
    card = load_card_file(str(card_with(tmp_path, 8)))
    check_program(card, load_program_file(str(SPEAK)))  # about 3 MiB of weights
    with pytest.raises(SpecError, match="weights take"):
        check_program(load_card_file(str(card_with(tmp_path, 1))), load_program_file(str(SPEAK)))
