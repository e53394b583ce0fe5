"""Speech that arrives over time: pushed by a reader (a file, a pipe, an HTTP body), read block by block."""

from __future__ import annotations

import threading

import numpy as np


class AudioSource:
    """Mono float32 samples at `sample_rate`, appended as they arrive and ended once; a reader asks for them at
    its own rate (resampled incrementally with soxr) and waits for samples that have not arrived yet."""

    def __init__(self, sample_rate: int):
        if sample_rate <= 0:
            raise ValueError(f"a sample rate must be positive, got {sample_rate}")
        self.sample_rate = int(sample_rate)
        self._raw: list[np.ndarray] = []
        self._ended = False
        self.error: str | None = None  # why the audio ended early (a broken stream), for the request's error
        self._cond = threading.Condition()
        self._views: dict[int, _RateView] = {}
        # encoded blocks by encoder, kept once the whole clip is encoded: a conversation's later turns hear the
        # same clip again without encoding it again (loops/audio_encode.py)
        self.encoded: dict[object, list] = {}

    @classmethod
    def whole(cls, samples: np.ndarray, sample_rate: int) -> AudioSource:
        """A clip that has arrived in full."""
        source = cls(sample_rate)
        source.push(samples)
        source.end()
        return source

    def push(self, samples: np.ndarray) -> None:
        block = np.asarray(samples, dtype=np.float32).reshape(-1)
        with self._cond:
            if self._ended:
                return  # stopped early (Ctrl-C): what still arrives is not heard
            if block.size:
                self._raw.append(block)
            self._cond.notify_all()

    def end(self, error: str | None = None) -> None:
        """No more samples will come (`error`: the stream broke); a second end changes nothing."""
        with self._cond:
            if self._ended:
                return
            self._ended = True
            self.error = error
            self._cond.notify_all()

    def arrived(self) -> np.ndarray:
        """Every sample arrived so far at the source's own rate (a heard stream kept as the file it was)."""
        with self._cond:
            return np.concatenate(self._raw) if self._raw else np.zeros(0, np.float32)

    @property
    def num_raw(self) -> int:
        with self._cond:
            return sum(len(c) for c in self._raw)

    def known(self, rate: int) -> tuple[int, bool]:
        """(samples at `rate` arrived so far, whether the audio ended), without waiting."""
        with self._cond:
            view = self._view(rate)
            return len(view), self._ended

    def read(self, rate: int, start: int, stop: int) -> np.ndarray:
        """Samples [start, stop) at `rate`, waiting until they have arrived; fewer when the audio ends first."""
        with self._cond:
            while True:
                view = self._view(rate)
                if len(view) >= stop or self._ended:
                    return view.samples(start, stop)
                self._cond.wait(0.5)

    def __reduce__(self):
        """A whole clip travels to a worker process as its raw chunks (resampled there as here); audio still
        arriving cannot, since a reader in another process would wait for samples that never reach it."""
        with self._cond:
            if not self._ended:
                raise ValueError("audio still arriving cannot be read by an encoder in a worker process; "
                                 "place the audio encoder in a thread (--placement audio_encoder=thread)")
            return _arrived, (self.sample_rate, list(self._raw), self.error)

    def _view(self, rate: int) -> _RateView:
        view = self._views.get(rate)
        if view is None:
            view = self._views[rate] = _RateView(self.sample_rate, rate)
        view.take(self._raw, self._ended)
        return view


def _arrived(sample_rate: int, raw: list[np.ndarray], error: str | None) -> AudioSource:
    source = AudioSource(sample_rate)
    source._raw = raw
    source.end(error)
    return source


class _RateView:
    """The source's samples at one rate: the arrived ones converted once, as they come."""

    def __init__(self, rate_in: int, rate_out: int):
        self.parts: list[np.ndarray] = []
        self.length = 0
        self.seen = 0  # raw chunks converted
        self.flushed = False
        self.stream = None
        if rate_in != rate_out:
            import soxr

            self.stream = soxr.ResampleStream(rate_in, rate_out, 1, dtype="float32", quality="HQ")

    def __len__(self) -> int:
        return self.length

    def take(self, raw: list[np.ndarray], ended: bool) -> None:
        while self.seen < len(raw):
            chunk = raw[self.seen]
            self.seen += 1
            last = ended and self.seen == len(raw)
            self._add(chunk if self.stream is None else self.stream.resample_chunk(chunk, last=last))
            self.flushed = self.flushed or last
        if ended and not self.flushed:
            if self.stream is not None:
                self._add(self.stream.resample_chunk(np.zeros(0, np.float32), last=True))
            self.flushed = True

    def _add(self, samples: np.ndarray) -> None:
        if len(samples):
            self.parts.append(np.asarray(samples, dtype=np.float32))
            self.length += len(samples)

    def samples(self, start: int, stop: int) -> np.ndarray:
        if len(self.parts) > 1:  # joined once, so each block's read copies only its own samples
            self.parts = [np.concatenate(self.parts)]
        whole = self.parts[0] if self.parts else np.zeros(0, np.float32)
        return whole[start:min(stop, self.length)].copy()
