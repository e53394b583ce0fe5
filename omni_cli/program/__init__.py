"""Cards and programs compiled into loops and a node graph; the op registry; the catalog."""

from . import (
    frame_ops,  # noqa: F401 - registers the multi-codebook talker's hand-off in OPS
    sentence_ops,  # noqa: F401 - registers the sentence cascade's ops in OPS
)
from .catalog import card_for, list_files, load_card_file, load_checked, load_program_file, resolve
from .checks import check_program, component_params
from .compiler import CompiledProgram, WiredRequest, compile_program
from .ops import OPS, RequestContext
from .sizing import RequestFootprint, size_request

__all__ = [
    "OPS", "CompiledProgram", "RequestContext", "RequestFootprint", "WiredRequest", "check_program", "compile_program",
    "component_params", "card_for", "list_files", "load_card_file", "load_checked", "load_program_file", "resolve",
    "size_request",
]
