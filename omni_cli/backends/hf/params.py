"""The hf backend's card parameters: per-component params and the backend settings (no torch import)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ...spec import Located, SpecError, SpecIssue
from ...spec.schema import ParamsSchema, bounded, load_dataclass

# Qwen2.5-Omni only produces speech when the system prompt is exactly this one (model card).
QWEN_OMNI_SYSTEM_PROMPT = (
    "You are Qwen, a virtual human developed by the Qwen Team, Alibaba Group, capable of perceiving "
    "auditory and visual inputs, as well as generating text and speech."
)


@dataclass
class ComponentParams(ParamsSchema):
    num_threads: int = bounded(0, min=0, max=4096, doc="torch intra-op CPU threads of this component's calls; "
                               "0: OMP_NUM_THREADS if set, else the card's params.num_threads (backends/hf/threads.py)")


@dataclass
class ThinkerParams(ComponentParams):
    system_prompt: str = bounded(QWEN_OMNI_SYSTEM_PROMPT, doc="system prompt of chat and echo prompts")
    echo_instruction: str = bounded("Repeat exactly: ", doc="user-turn prefix of echo prompts")


@dataclass
class TalkerParams(ComponentParams):
    max_new_tokens: int = bounded(4096, min=1, max=65536, doc="most codec tokens per utterance, EOS included")
    min_new_tokens: int = bounded(0, min=0, max=65536, doc="codec EOS is suppressed before this many (generate's "
                                                          "talker_min_new_tokens)")


@dataclass
class VocoderParams(ComponentParams):
    dit_num_steps: int = bounded(10, min=2, max=1000, doc="time points of the flow-matching ODE")
    dit_guidance_scale: float = bounded(0.5, min=0.0, max=100.0, doc="classifier-free guidance of the DiT")
    dit_sway_coefficient: float = bounded(-1.0, min=-10.0, max=10.0, doc="sway sampling of the ODE time points")
    chunk_past_frames: int = bounded(48, min=0, max=4096, doc="mel frames of left context per DiT window")
    chunk_future_frames: int = bounded(24, min=0, max=4096, doc="mel frames of right context per DiT window")
    bigvgan_overlap_frames: int = bounded(
        40, min=0, max=4096, doc="mel frames BigVGAN re-reads from the previous chunk; half trimmed on each inner edge"
    )
    bigvgan_seam: Literal["held", "lookahead", "stream"] = bounded(
        "held", doc="where a chunk's samples end: held back half the overlap until the next chunk's mel comes "
        "(BigVGAN's samples over the kept mel), or at the chunk's last kept frame, BigVGAN reading half the "
        "overlap past it from the DiT window's look-ahead mel (each chunk's audio half the overlap sooner); "
        "or stream: BigVGAN's layers carry their context from chunk to chunk, so each mel frame is decoded once "
        "(no overlap) and the samples are one whole-utterance forward's to float rounding, each chunk's ending "
        "BigVGAN's look-ahead (about 34 mel frames) before its last code, the last chunk flushing the rest "
        "(backends/hf/bigvgan_stream.py)")
    bigvgan_stream_fill: bool = bounded(
        True, doc="bigvgan_seam stream: a chunk whose stream samples would not reach past the audio already sent "
        "(an utterance's first chunks, within BigVGAN's look-ahead) is made as lookahead makes it, so the first "
        "audio comes as early; the stream then starts at the utterance's first frame, skipping what was sent. "
        "false: every mel frame decoded once and every sample the whole forward's, the first audio later")
    bigvgan_batch_frames: int = bounded(
        640, min=1, max=1 << 20, doc="most mel frames each row thread gets in one batched BigVGAN call (rows shared "
        "out evenly over as few calls as keep to it): a few rows a thread pay each operation's fixed cost once, "
        "more outgrow the caches (examples/hf_bigvgan_batch.py)")
    dit_block_attention_from: int = bounded(
        5, min=0, max=4096, doc="DiT windows of at least this many blocks (the DiT's block_size frames each) attend "
        "block by block on a CPU, each block's queries against the blocks its layer's mask keeps: the same values to "
        "float rounding, less time on long windows (backends/hf/dit.py); 0: never (transformers' attention, bit-equal "
        "with dit_ahead_of_time off)")
    dit_compile: bool = bounded(
        False, doc="on a CPU, compile the DiT's velocity with torch.compile when the vocoder loads (about a minute "
        "the first time on a small machine, seconds from inductor's cache after): the same mel to float rounding, "
        "fewer and fused operations per ODE step; pays on a small DiT, not at 3B width (backends/hf/dit.py, DiTCompile); "
        "unused where dit_ahead_of_time's files load")
    dit_ahead_of_time: bool = bounded(
        True, doc="on a CPU, run the DiT's windows (two rows or more: with guidance, all) through its velocity "
        "compiled ahead of time (AOTInductor), one file for the whole-window mask form and one for the block form: "
        "built once per machine and DiT shape (about 20 s each), kept in $OMNI_CLI_CACHE or ~/.cache/omni_cli and "
        "loaded in milliseconds after; the same mel to float rounding, a first chunk's DiT about a third of the "
        "time on the tiny checkpoint (backends/hf/dit_aot.py)")
    bigvgan_ahead_of_time: bool = bounded(
        True, doc="on a CPU in float32, run BigVGAN's anti-aliased activations through one function compiled ahead "
        "of time (AOTInductor), built once per machine (about 15 s) into the same cache: the same samples to float "
        "rounding, a first chunk's BigVGAN call about 40% shorter on the tiny checkpoint (backends/hf/bigvgan_aot.py)")
    row_threads: int = bounded(
        0, min=0, max=4096, doc="Python threads a batched DiT window or BigVGAN call splits its rows over, each "
        "with num_threads intra-op threads, when the rows are enough to pay; 0: the cores this process may "
        "use over num_threads, one on a GPU (backends/hf/rows.py)")

    def problems(self) -> list[tuple[str, str]]:
        out = []
        if self.bigvgan_overlap_frames % 2:
            out.append(("bigvgan_overlap_frames", "must be even (half of it is trimmed on each side)"))
        reads_ahead = self.bigvgan_seam == "lookahead" or self.bigvgan_seam == "stream" and self.bigvgan_stream_fill
        if reads_ahead and self.chunk_future_frames < self.bigvgan_overlap_frames // 2:
            out.append(("bigvgan_seam", f"{self.bigvgan_seam} reads {self.bigvgan_overlap_frames // 2} mel frames past each "
                        f"chunk from the DiT's look-ahead, but chunk_future_frames is {self.chunk_future_frames}"))
        if self.chunk_future_frames % 2:
            out.append(("chunk_future_frames", "must be even (2 mel frames per code)"))
        return out


@dataclass
class AudioEncoderParams(ComponentParams):
    """The thinker's audio tower; its feature extractor comes from the checkpoint's preprocessor_config.json."""


@dataclass
class ImageEncoderParams(ComponentParams):
    """The thinker's vision tower; its image processor's settings come from preprocessor_config.json."""


PARAMS = {"thinker": ThinkerParams, "talker": TalkerParams, "vocoder": VocoderParams,
          "audio_encoder": AudioEncoderParams, "image_encoder": ImageEncoderParams}


@dataclass(frozen=True)
class HFParams:
    """Backend settings: the card's top-level `params`, overridable from the CLI (--model-path ...)."""

    model_path: str | None = None  # local Qwen2.5-Omni checkpoint directory (Hugging Face format + spk_dict.pt)
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"  # thinker/talker; token2wav runs in float32
    device: str = "cpu"  # torch device: cpu, cuda or cuda:N
    attn_implementation: Literal["sdpa", "eager"] = "sdpa"  # transformers attention kernel
    # add the codec PAD/BOS embeddings to the talker prefill's last two positions, as Qwen's released
    # inference does; false skips them, as transformers 5.x generate does (to compare like with like)
    codec_bos_pad_in_prefill: bool = True
    num_threads: int = bounded(0, min=0, max=4096, doc="torch intra-op CPU threads of each component without "
                               "its own when OMP_NUM_THREADS is not set; 0: 1 (measured: backends/hf/threads.py)")
    # config.json's model_type of the checkpoints the card is written for: another is refused before any
    # weights load (None: whichever of the two the directory holds)
    model_type: Literal["qwen2_5_omni", "qwen3_omni_moe"] | None = None

    @classmethod
    def from_settings(cls, settings: dict[str, Any], source: str = "<hf settings>") -> HFParams:
        """Validate `settings` strictly (every problem in one SpecError); a checkpoint path is required."""
        config = load_dataclass(cls, Located(dict(settings), source))
        if not config.model_path:
            raise SpecError([SpecIssue(source, None, "model_path",
                                       "the hf backend needs a checkpoint directory: pass --model-path DIR")])
        return config


SETTINGS = HFParams  # what the compiler checks the card's `params` and the command line against
weight_bytes = None  # the weights are the checkpoint's: nothing to estimate from the card
