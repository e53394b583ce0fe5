"""Streaming audio output: WAV files valid after every chunk, WAV/raw PCM to pipes, FLAC."""

from .base import AudioWriter
from .errors import AudioOutputError, OutputClosed
from .factory import FORMATS, SUFFIX_FORMATS, AudioFormat, open_audio_output
from .flac_file import FlacFileWriter
from .pcm import PCM16_SCALE, UNKNOWN_SIZE, WAV_HEADER_BYTES, float_to_pcm16, wav_header
from .streams import RawPcmWriter, WavStreamWriter
from .wav_file import WavFileWriter

__all__ = [
    "FORMATS",
    "PCM16_SCALE",
    "SUFFIX_FORMATS",
    "UNKNOWN_SIZE",
    "WAV_HEADER_BYTES",
    "AudioFormat",
    "AudioOutputError",
    "AudioWriter",
    "FlacFileWriter",
    "OutputClosed",
    "RawPcmWriter",
    "WavFileWriter",
    "WavStreamWriter",
    "float_to_pcm16",
    "open_audio_output",
    "wav_header",
]
