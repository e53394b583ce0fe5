"""Split the voice's one VITS graph at the decoder's first convolution, and make its noise an input.

The voice ships one ONNX graph: phoneme ids -> waveform. Everything before `/dec/conv_pre` (text
encoder, duration predictor, flow) makes the latent frames the decoder reads; the HiFi-GAN decoder
from `/dec/conv_pre` on turns frames into samples (256 per frame). Splitting there lets the decoder
run on chunks of frames, so the first audio does not wait for the whole sentence's waveform.

The graph draws its two noises with `RandomNormalLike`, which onnxruntime seeds once per session, so
the same request would sound different depending on what ran before it. We replace each draw by a
slice of a noise input the caller fills from the request's seed: interleaved equals serial.
"""

from __future__ import annotations

from pathlib import Path

import onnx
from onnx import TensorProto, helper

FRAMES = "/Mul_7_output_0"  # z * y_mask: the decoder's input, [batch, channels, frames]
DECODER_FIRST = "/dec/conv_pre/Conv"
WAVEFORM = "output"
# the graph's noise draws -> the inputs that replace them: [batch, positions, channels] (see below)
NOISE_INPUTS = {"/dp/RandomNormalLike": "duration_noise", "/RandomNormalLike": "frame_noise"}


def read_graph(path: Path) -> onnx.ModelProto:
    model = onnx.load_model(str(path))
    names = {n.name for n in model.graph.node}
    missing = [n for n in [DECODER_FIRST, *NOISE_INPUTS] if n not in names]
    if missing:  # a voice exported by another VITS version: say so instead of failing deep inside onnx
        raise ValueError(f"{path.name} is not a VITS graph this backend can split (no node {missing[0]})")
    return model


def _extract(model: onnx.ModelProto, inputs: list[str], outputs: list[str]) -> onnx.ModelProto:
    return onnx.utils.Extractor(model).extract_model(inputs, outputs)


def acoustic_graph(model: onnx.ModelProto) -> onnx.ModelProto:
    """Phoneme ids, lengths, scales and two noise inputs -> latent frames [batch, channels, frames]."""
    part = _extract(model, ["input", "input_lengths", "scales"], [FRAMES])
    graph = part.graph
    kept: list[onnx.NodeProto] = []
    for node in graph.node:
        name = NOISE_INPUTS.get(node.name)
        if name is None:
            kept.append(node)
            continue
        # The noise is given as [batch, positions, channels] and transposed here, so the first T
        # positions of a longer draw are the same numbers whatever its length: the caller may size
        # it generously (frames are only known inside the graph) without changing the result.
        like = node.input[0]
        graph.input.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", f"{name}_len", "channels"]))
        kept.append(helper.make_node("Transpose", [name], [f"{name}/bct"], perm=[0, 2, 1], name=f"{name}/Transpose"))
        kept.append(helper.make_node("Shape", [like], [f"{name}/shape"], name=f"{name}/Shape"))
        kept.append(helper.make_node("Slice", [f"{name}/bct", f"{name}/zeros", f"{name}/shape", f"{name}/axes"],
                                     list(node.output), name=f"{name}/Slice"))
        graph.initializer.extend([helper.make_tensor(f"{name}/zeros", TensorProto.INT64, [3], [0, 0, 0]),
                                  helper.make_tensor(f"{name}/axes", TensorProto.INT64, [3], [0, 1, 2])])
    del graph.node[:]
    graph.node.extend(kept)
    return part


def decoder_graph(model: onnx.ModelProto) -> onnx.ModelProto:
    """Latent frames [batch, channels, frames] -> waveform [batch, 1, 1, frames * hop]."""
    return _extract(model, [FRAMES], [WAVEFORM])


def frame_channels(model: onnx.ModelProto) -> int:
    """Channels of a latent frame: the decoder's first convolution reads them."""
    weight = next(t for t in model.graph.initializer if t.name == "dec.conv_pre.weight")
    return int(weight.dims[1])


def samples_per_frame(model: onnx.ModelProto) -> int:
    """Samples one frame makes: the product of the decoder's upsampling strides."""
    hop = 1
    for node in model.graph.node:
        if node.op_type == "ConvTranspose" and node.name.startswith("/dec/"):
            strides = next(a for a in node.attribute if a.name == "strides")
            hop *= int(strides.ints[0])
    return hop
