"""Issue 12: a program graph that validates is one that speaks right; every other is refused with file:line.

Hypothesis rewires the shipped program (an input moved to another slot, a node dropped, duplicated or
given another op). Whatever it makes, either validation refuses it (one SpecError, every issue with
the file and a line) or one request through it emits audio: every chunk once, in order, and the same
samples as the shipped program (which a rewired graph that validates must compute).
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omni_cli.engine import Engine
from omni_cli.program import OPS, check_program, compile_program, load_card_file
from omni_cli.spec import SpeakRequest, SpecError, load_program
from omni_cli.spec.stream import AudioChunk
from omni_cli.spec.yaml_source import parse_yaml

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = yaml.safe_load((ROOT / "programs" / "speak.yaml").read_text())
CARD = load_card_file(str(ROOT / "cards" / "qwen2_5_omni_toy.yaml"))


@st.composite
def rewired(draw) -> dict:
    doc = copy.deepcopy(SHIPPED)
    nodes = doc["nodes"]
    slots = ["text"] + [n["output"] for n in nodes if n.get("output")]
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(nodes) - 1))
        change = draw(st.sampled_from(["input", "drop", "duplicate", "op"]))
        if change == "input" and nodes[i].get("inputs"):
            nodes[i]["inputs"] = [draw(st.sampled_from(slots))]
        elif change == "drop" and len(nodes) > 1:
            nodes.pop(i)
        elif change == "duplicate":
            twin = {**nodes[i], "id": nodes[i]["id"] + "_again"}
            twin.pop("output", None) if "op" in twin else None
            nodes.append(twin)
        elif change == "op" and "op" in nodes[i]:
            nodes[i]["op"] = draw(st.sampled_from(sorted(OPS)))
    return doc


def spoken(program) -> list[AudioChunk]:
    engine = Engine(compile_program(CARD, program))
    engine.submit(SpeakRequest("Hi there", seed=3))
    return [e for e in engine.events() if isinstance(e, AudioChunk)]


REFERENCE = None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=rewired())
def test_a_rewired_program_is_refused_with_file_line_or_speaks_like_the_shipped_one(doc):
    global REFERENCE
    source = "rewired.yaml"
    try:
        program = load_program(parse_yaml(yaml.safe_dump(doc, sort_keys=False), source))
        check_program(CARD, program)
        compiled = compile_program(CARD, program)  # what only the built components know (a talker's frames)
    except SpecError as exc:
        assert exc.issues and all(i.file == source and i.line is not None for i in exc.issues), exc.issues
        return
    if REFERENCE is None:
        REFERENCE = spoken(load_program(parse_yaml(yaml.safe_dump(SHIPPED, sort_keys=False), "speak.yaml")))
    engine = Engine(compiled)
    engine.submit(SpeakRequest("Hi there", seed=3))
    chunks = [e for e in engine.events() if isinstance(e, AudioChunk)]
    assert [c.index for c in chunks] == list(range(len(chunks))) and chunks  # every chunk once, in order
    assert np.array_equal(np.concatenate([c.samples for c in chunks]), np.concatenate([c.samples for c in REFERENCE]))
