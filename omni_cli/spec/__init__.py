"""Cards, programs and requests as validated dataclasses (the leaf layer: no engine, no backends)."""

from .card import CardSpec, ComponentSpec, LoopSpec, SamplingSpec, check_card, load_card
from .errors import SpecError, SpecIssue
from .program import NodeSpec, ProgramSpec, check_program_spec, load_program, topological_order
from .request import PriorTurn, SpeakRequest, clean_text
from .schema import bounded, load_dataclass
from .yaml_source import Located, parse_yaml, read_yaml

__all__ = [
    "CardSpec", "ComponentSpec", "Located", "LoopSpec", "NodeSpec", "ProgramSpec", "SamplingSpec",
    "PriorTurn", "SpeakRequest", "SpecError", "SpecIssue", "bounded", "check_card", "check_program_spec", "clean_text", "load_card",
    "load_dataclass",
    "load_program", "parse_yaml", "read_yaml", "topological_order",
]
