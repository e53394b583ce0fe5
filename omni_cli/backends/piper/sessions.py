"""onnxruntime sessions for the two halves of the voice's graph (imported only by this backend)."""

from __future__ import annotations


def session(model: bytes, num_threads: int):
    """A CPU session on a serialized ONNX graph."""
    import onnxruntime as ort  # lazy, as every import of this backend

    options = ort.SessionOptions()
    options.intra_op_num_threads = num_threads  # 0: onnxruntime's choice (one per core)
    options.log_severity_level = 3  # its warnings about unused initializers are ours to know, not the user's
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
