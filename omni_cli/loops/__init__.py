"""Driven loops: ar_decode (thinker, talker), audio_decode (vocoder), audio_encode (the input tower), the sentence
cascade's phonemize, sentence_frames and frame_decode, and the feeds between them."""

from . import audio_encode, frame_decode, image_encode, sentences  # noqa: F401, I001 - register the input and sentence cascade's loop kinds
from .ar_decode import ARDecodeLoop, ARState, LoopInputError
from .audio_decode import AudioDecodeLoop, AudioPiece, AudioState
from .base import DONE, NO_BOUND, Done, Footprint, Loop, LoopRequest, LoopResult, LoopState, LoopStatus, OutputBound, Wait, WorkPlan
from .channel import ARChannel, Channel
from .feeds import ARFeed, CodesFeed, StepFeed, TalkerFeed, ThinkerFeed
from .registry import LOOP_KINDS, register_loop_kind

__all__ = [
    "DONE", "LOOP_KINDS", "ARChannel", "ARDecodeLoop", "ARFeed", "ARState", "AudioDecodeLoop", "AudioPiece", "AudioState",
    "Channel", "CodesFeed", "Done", "Footprint", "Loop", "LoopInputError", "LoopRequest", "LoopResult", "LoopState", "LoopStatus",
    "NO_BOUND", "OutputBound", "StepFeed", "TalkerFeed", "ThinkerFeed", "Wait", "WorkPlan", "register_loop_kind",
]
