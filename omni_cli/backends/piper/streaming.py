"""Rewrite the voice's HiFi-GAN decoder graph into a streaming one that decodes every frame once.

Each chunk of frames runs only its new frames. Every layer that looks along time keeps what it needs from
the previous chunk as an explicit state input/output of the graph:

- a Conv with pads (l, r) keeps the last d*(k-1) values of its input; it starts from l zeros (its left
  padding) and emits each output as soon as its r right-hand inputs arrived, so it delays its stream by r;
- a ConvTranspose (kernel 2*stride, pads p) keeps its last input; its first chunk drops the p outputs that
  the whole decode crops, so it delays by p plus its input's delay times the stride;
- where two streams with different delays meet (a residual Add, the sum of the resblocks), the earlier one
  keeps its extra values until the later one catches up.

The graph reads two flags: `first` (the state is the initial one: crop) and `last` (flush: each Conv pads
its right side with the r zeros, each ConvTranspose with one zero input, as the whole decode does). The
chunks' outputs, concatenated, are one whole-sentence decode: only float rounding differs. Needs `onnx`,
and runs once per voice, when the graph cache is built.
"""

from __future__ import annotations

from dataclasses import dataclass

import onnx
from onnx import TensorProto, helper

from .stream_state import StreamSpec

POINTWISE = {"LeakyRelu", "Relu", "Tanh", "Sigmoid", "Mul", "Div", "Add", "Sub", "Unsqueeze", "Identity"}
FIRST, LAST = "first", "last"


@dataclass
class _Stream:
    delay: int  # values this tensor lags its full length by, until the last chunk flushes
    channels: int


class _Rewriter:
    """Walks the decoder's nodes in order, replacing each time-wise node by its streaming form."""

    def __init__(self, graph: onnx.GraphProto):
        self.graph = graph
        self.weights = {t.name: t for t in graph.initializer}
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.spec = StreamSpec()
        self.streams: dict[str, _Stream] = {}
        self.count = 0

    def name(self, hint: str) -> str:
        self.count += 1
        return f"stream/{self.count}/{hint}"

    def const(self, values: list[int]) -> str:
        name = self.name("const")
        self.inits.append(helper.make_tensor(name, TensorProto.INT64, [len(values)], values))
        return name

    def op(self, op_type: str, inputs: list[str], **attrs) -> str:
        out = self.name(op_type)
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def state(self, channels: int, initial: int) -> tuple[str, str]:
        """A new state: its input's name and its output's name."""
        index = len(self.spec.states)
        name = f"state.{index}"
        self.spec.states.append((name, channels, initial))
        value = helper.make_tensor_value_info
        self.graph.input.append(value(name, TensorProto.FLOAT, ["batch", channels, f"s{index}"]))
        self.graph.output.append(value(f"{name}.out", TensorProto.FLOAT, ["batch", channels, f"s{index}.out"]))
        return name, f"{name}.out"

    def tail(self, x: str, keep: int, out: str, flushed: int) -> None:
        """`out` = the `keep` values of `x` along time before its flush zeros (the last chunk's state is unused)."""
        big = 1 << 62
        start = self.op("Sub", [self.const([-keep]), self.scaled_flag(LAST, [flushed])])
        end = self.op("Sub", [self.const([big]), self.scaled_flag(LAST, [big + flushed])])
        self.nodes.append(helper.make_node("Slice", [x, start, end, self.const([-1])], [out], name=self.name("tail")))

    def scaled_flag(self, flag: str, values: list[int]) -> str:
        return self.op("Mul", [self.const(values), flag])

    def flush_zeros(self, like: str, count: int) -> str:
        """`count` zeros along time on the last chunk (none before), as many rows and channels as `like`."""
        rows = self.op("Shape", [like], end=2)
        shape = self.op("Concat", [rows, self.scaled_flag(LAST, [count])], axis=0)
        zero = helper.make_tensor("value", TensorProto.FLOAT, [1], [0.0])
        return self.op("ConstantOfShape", [shape], value=zero)


def _attrs(node: onnx.NodeProto) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _conv(rw: _Rewriter, node: onnx.NodeProto, src: _Stream) -> _Stream:
    a = _attrs(node)
    (k,), (d,) = a["kernel_shape"], a.get("dilations", [1])
    left, right = a.get("pads", [0, 0])
    span = d * (k - 1)
    if a.get("strides", [1]) != [1] or left + right != span or a.get("auto_pad", b"NOTSET") != b"NOTSET":
        raise ValueError(f"{node.name}: a strided or resizing Conv cannot be streamed")
    weight = rw.weights[node.input[1]]
    x = node.input[0]
    if span:
        state_in, state_out = rw.state(src.channels, left)
        x = rw.op("Concat", [state_in, x, rw.flush_zeros(x, right)], axis=-1)
        rw.tail(x, span, state_out, right)
    attrs = {k: v for k, v in a.items() if k != "pads"}
    rw.nodes.append(helper.make_node("Conv", [x, *node.input[1:]], list(node.output), name=node.name, **attrs))
    return _Stream(src.delay + right, int(weight.dims[0]))


def _conv_transpose(rw: _Rewriter, node: onnx.NodeProto, src: _Stream) -> _Stream:
    a = _attrs(node)
    (k,), (s,), (p, p_end) = a["kernel_shape"], a["strides"], a.get("pads", [0, 0])
    if k != 2 * s or p != p_end or 2 * p != k - s or a.get("output_padding") or a.get("dilations", [1]) != [1]:
        raise ValueError(f"{node.name}: only a ConvTranspose of kernel 2 * stride, making length * stride, is streamed")
    weight = rw.weights[node.input[1]]
    state_in, state_out = rw.state(src.channels, 1)
    x = rw.op("Concat", [state_in, node.input[0], rw.flush_zeros(node.input[0], 1)], axis=-1)
    rw.tail(x, 1, state_out, 1)
    attrs = {k: v for k, v in a.items() if k != "pads"}
    full = rw.op("ConvTranspose", [x, *node.input[1:]], **attrs)
    # outputs of the one state input and of the input before it are complete from s on: the first chunk
    # crops p more (the whole decode's crop), the last ends p into the zero input's outputs
    start = rw.op("Add", [rw.const([s]), rw.scaled_flag(FIRST, [p])])
    end = rw.op("Sub", [rw.const([-s]), rw.scaled_flag(LAST, [s - p])])
    rw.nodes.append(helper.make_node("Slice", [full, start, end, rw.const([-1])], list(node.output), name=node.name))
    return _Stream(src.delay * s + p, int(weight.dims[1]) * int(a.get("group", 1)))


def _align(rw: _Rewriter, node: onnx.NodeProto) -> _Stream:
    """A pointwise node: streams that lag less are held back to the most delayed one's values."""
    found = {i: rw.streams[name] for i, name in enumerate(node.input) if name in rw.streams}
    latest = max(found.values(), key=lambda st: st.delay)
    inputs = list(node.input)
    for i, st in found.items():
        if st.delay == latest.delay:
            continue
        other = next(node.input[j] for j, o in found.items() if o.delay == latest.delay)
        state_in, state_out = rw.state(st.channels, 0)
        held = rw.op("Concat", [state_in, inputs[i]], axis=-1)
        length = rw.op("Shape", [other], start=-1)
        big = rw.const([1 << 62])
        inputs[i] = rw.op("Slice", [held, rw.const([0]), length, rw.const([-1])])
        rw.nodes.append(helper.make_node("Slice", [held, length, big, rw.const([-1])], [state_out],
                                         name=rw.name("held")))
    rw.nodes.append(helper.make_node(node.op_type, inputs, list(node.output), name=node.name,
                                     **_attrs(node)))
    return _Stream(latest.delay, latest.channels)


def streaming_graph(model: onnx.ModelProto, frames: str, channels: int) -> tuple[onnx.ModelProto, StreamSpec]:
    """The decoder graph (input `frames` [batch, channels, n] -> waveform) as a streaming graph."""
    rewritten = onnx.ModelProto()
    rewritten.CopyFrom(model)
    graph = rewritten.graph
    rw = _Rewriter(graph)
    rw.streams[frames] = _Stream(0, channels)
    for flag in (FIRST, LAST):
        graph.input.append(helper.make_tensor_value_info(flag, TensorProto.INT64, [1]))
    for node in model.graph.node:
        found = [rw.streams[name] for name in node.input if name in rw.streams]
        if not found:  # shapes and constants
            rw.nodes.append(node)
            continue
        if node.op_type == "Conv":
            out = _conv(rw, node, found[0])
        elif node.op_type == "ConvTranspose":
            out = _conv_transpose(rw, node, found[0])
        elif node.op_type in POINTWISE:
            out = _align(rw, node)
        else:
            raise ValueError(f"{node.name}: a {node.op_type} node cannot be streamed")
        rw.streams[node.output[0]] = out
    del graph.node[:]
    graph.node.extend(rw.nodes)
    graph.initializer.extend(rw.inits)
    (wave,) = [o.name for o in model.graph.output]
    rw.spec.delay_samples = rw.streams[wave].delay
    return rewritten, rw.spec

