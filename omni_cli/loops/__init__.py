"""Driven loops: ar_decode (thinker, talker) and audio_decode (vocoder), and the feeds between them."""

from .ar_decode import ARDecodeLoop, ARState, LoopInputError
from .audio_decode import AudioDecodeLoop, AudioPiece, AudioState
from .base import DONE, Done, Loop, LoopResult, LoopState, LoopStatus, Wait, WorkPlan
from .channel import ARChannel, Channel
from .feeds import ARFeed, CodesFeed, StepFeed, TalkerFeed, ThinkerFeed

__all__ = [
    "DONE", "ARChannel", "ARDecodeLoop", "ARFeed", "ARState", "AudioDecodeLoop", "AudioPiece", "AudioState",
    "Channel", "CodesFeed", "Done", "Loop", "LoopInputError", "LoopResult", "LoopState", "LoopStatus",
    "StepFeed", "TalkerFeed", "ThinkerFeed", "Wait", "WorkPlan",
]
