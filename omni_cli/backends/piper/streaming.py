"""Rewrite the voice's HiFi-GAN decoder graph into a streaming one that decodes every frame once.

Each chunk of frames runs only its new frames; what a layer needs from the sentence's previous chunk is an
explicit state input/output of the graph:

- before the first upsampling (frame rate), each Conv with pads (l, r) keeps the last d*(k-1) values of its
  input, starts from l zeros (its left padding) and emits an output once its r right-hand inputs arrived: it
  delays its stream by r; where two streams with different delays meet, the earlier is held back;
- each ConvTranspose (kernel 2*stride, pads p) keeps its last input; its first chunk drops the p outputs the
  whole decode crops, so it delays by p plus its input's delay times the stride;
- the resblocks after an upsampling (a segment, at one rate) keep the last `left + right` values of their
  input, their convolutions' reach on each side: the segment runs as in the whole decode on those and the new
  values, and keeps the outputs that saw real values wherever the whole decode did. Per layer that recomputes
  `left + right` values per chunk (a few hundred samples' worth), which costs less than a state per layer:
  each state is a copy of the layer's input, and at 32 channels copies cost as much as the convolutions.

The graph reads two flags: `first` (the states are the initial ones) and `last` (flush: each Conv pads its
right side with r zeros, each ConvTranspose with one zero input, and a segment keeps up to its end, as the
whole decode does). A chunk that is both runs the decoder's own nodes. The chunks' outputs, concatenated, are
one whole-sentence decode: only float rounding differs. Needs `onnx`; runs once per voice, when the graph
cache is built.
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
    rate: int = 1  # values per frame


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
    return _Stream(src.delay + right, int(weight.dims[0]), src.rate)


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
    return _Stream(src.delay * s + p, int(weight.dims[1]) * int(a.get("group", 1)), src.rate * s)


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
    return _Stream(latest.delay, latest.channels, latest.rate)


def streaming_graph(model: onnx.ModelProto, frames: str, channels: int) -> tuple[onnx.ModelProto, StreamSpec]:
    """The decoder graph (input `frames` [batch, channels, n] -> waveform) as a streaming graph. A chunk that is
    its sentence's first and last runs the decoder's own nodes, which need no states nor copies to keep them
    (most sentences are one chunk); the others run the streaming nodes. Both read the same weights."""
    rewritten = onnx.ModelProto()
    rewritten.CopyFrom(model)
    graph = rewritten.graph
    (wave,) = [o.name for o in model.graph.output]
    rw = _Rewriter(graph)
    _stream_nodes(rw, model.graph.node, frames, channels)
    rw.spec.delay_samples = rw.streams[wave].delay
    rw.spec.lead_frames = max(rw.spec.lead_frames, rw.spec.delay_samples // rw.streams[wave].rate + 1)
    states = [name for name, _, _ in rw.spec.states]
    stream_branch = _branch("stream", rw.nodes, [wave, *[f"{n}.out" for n in states]], "stream/")
    whole_branch = _branch("whole", [*_renamed(model.graph.node, frames, rw.weights, "whole/"),
                                     *[helper.make_node("Identity", [n], [f"whole/{n}.out"]) for n in states]],
                           [wave, *[f"{n}.out" for n in states]], "whole/")
    first, last = (rw.op("Cast", [flag], to=TensorProto.BOOL) for flag in (FIRST, LAST))
    alone = rw.op("And", [first, last])
    outputs = [wave, *[f"{n}.out" for n in states]]
    choose = helper.make_node("If", [alone], outputs, name="stream/If", then_branch=whole_branch,
                              else_branch=stream_branch)
    del graph.node[:]
    graph.node.extend([*rw.nodes[-3:], choose])
    graph.initializer.extend(rw.inits)
    return rewritten, rw.spec


def _stream_nodes(rw: _Rewriter, nodes, frames: str, channels: int) -> None:
    """`rw.nodes`: the decoder's nodes in their streaming form: layer by layer up to the first upsampling,
    then each upsampling and the stretch of resblocks after it (a segment, see `_segment`)."""
    rw.streams[frames] = _Stream(0, channels)
    for flag in (FIRST, LAST):
        rw.graph.input.append(helper.make_tensor_value_info(flag, TensorProto.INT64, [1]))
    segment: list[onnx.NodeProto] | None = None
    for node in nodes:
        if node.op_type == "ConvTranspose" and segment:
            _segment(rw, segment)
        if segment is not None and node.op_type != "ConvTranspose":
            segment.append(node)
            continue
        found = [rw.streams[name] for name in node.input if name in rw.streams]
        if not found:  # shapes and constants
            rw.nodes.append(node)
            continue
        if node.op_type == "Conv":
            out = _conv(rw, node, found[0])
        elif node.op_type == "ConvTranspose":
            out, segment = _conv_transpose(rw, node, found[0]), []
        elif node.op_type in POINTWISE:
            out = _align(rw, node)
        else:
            raise ValueError(f"{node.name}: a {node.op_type} node cannot be streamed")
        rw.streams[node.output[0]] = out
    if segment:
        _segment(rw, segment)


def _segment(rw: _Rewriter, nodes: list[onnx.NodeProto]) -> None:
    """The nodes after an upsampling, up to the next, at one rate: run as the whole decode runs them (their own
    zero pads) on the segment input's new values after its last `left + right` ones, the reach of the segment's
    convolutions on each side; only the outputs that saw no pad where the whole decode saw values are kept. One
    copy in and one out per chunk, and `left + right` values recomputed per layer, instead of a state per layer."""
    (entry,) = {i for node in nodes for i in node.input if i in rw.streams}
    reach = {entry: (0, 0)}
    for node in nodes:
        ins = [reach[i] for i in node.input if i in reach]
        if node.op_type == "Conv":
            left, right = _attrs(node)["pads"]
            reach[node.output[0]] = (ins[0][0] + left, ins[0][1] + right)
        elif node.op_type in POINTWISE and ins:
            reach[node.output[0]] = (max(r[0] for r in ins), max(r[1] for r in ins))
        elif ins:
            raise ValueError(f"{node.name}: a {node.op_type} node cannot be streamed")
    exit_name = next(o for node in reversed(nodes) for o in node.output if o not in
                     {i for other in nodes for i in other.input})
    left, right = reach[exit_name]
    src = rw.streams[entry]
    state_in, state_out = rw.state(src.channels, 0)
    held = rw.op("Concat", [state_in, entry], axis=-1)
    rw.nodes.append(helper.make_node("Slice", [held, rw.const([-(left + right)]), rw.const([1 << 62]),
                                              rw.const([-1])], [state_out], name=rw.name("tail")))
    full = rw.name("segment")
    for node in nodes:
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        copy.input[:] = [held if i == entry else i for i in node.input]
        copy.output[:] = [full if o == exit_name else o for o in node.output]
        rw.nodes.append(copy)
    # a first chunk starts at the true edge, a last one ends at it: there the pads are the whole decode's
    start = rw.op("Sub", [rw.const([left]), rw.scaled_flag(FIRST, [left])])
    end = rw.op("Add", [rw.const([-right]), rw.scaled_flag(LAST, [(1 << 62) + right])])
    rw.nodes.append(helper.make_node("Slice", [full, start, end, rw.const([-1])], [exit_name], name=rw.name("keep")))
    channels = src.channels
    for node in nodes:
        if node.op_type == "Conv":
            channels = int(rw.weights[node.input[1]].dims[0])
    rw.streams[exit_name] = _Stream(src.delay + right, channels, src.rate)
    # a first chunk must bring the segment more values than its state keeps
    rw.spec.lead_frames = max(rw.spec.lead_frames, -(-(src.delay + left + right + 1) // src.rate))


def _renamed(nodes, frames: str, weights: dict, prefix: str) -> list[onnx.NodeProto]:
    """Copies of `nodes` whose own values are prefixed (a branch's names must not shadow the outer graph's)."""
    outer = {frames, *weights}
    copies = []
    for node in nodes:
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        copy.input[:] = [n if n in outer or not n else prefix + n for n in node.input]
        copy.output[:] = [prefix + n for n in node.output]
        copy.name = prefix + node.name
        copies.append(copy)
    return copies


def _branch(name: str, nodes: list[onnx.NodeProto], outputs: list[str], prefix: str) -> onnx.GraphProto:
    """A branch of the If whose outputs are `outputs`, renamed with `prefix` inside it."""
    produced = {o for node in nodes for o in node.output}
    body = []
    for node in nodes:
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        copy.output[:] = [prefix + o if o in outputs and not o.startswith(prefix) else o for o in node.output]
        copy.input[:] = [prefix + i if i in outputs and i in produced and not i.startswith(prefix) else i
                         for i in node.input]
        body.append(copy)
    values = [helper.make_empty_tensor_value_info(o if o.startswith(prefix) else prefix + o) for o in outputs]
    return helper.make_graph(body, name, [], values)
