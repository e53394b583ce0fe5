"""The engine: requests, admission, scheduling, cancellation, trace events."""

from .admission import AdmissionError, MemoryBudget
from .engine import Engine
from .executor import BatchOutcome, Executor, InlineExecutor, run_batch
from .request import RequestHandle, RequestResult
from .scheduler import POLICIES
from .stats import EngineStats
from .trace import RequestEvent, TraceEvent, WorkUnitEvent

__all__ = [
    "POLICIES", "AdmissionError", "BatchOutcome", "Engine", "EngineStats", "Executor", "InlineExecutor", "MemoryBudget",
    "RequestEvent", "RequestHandle", "RequestResult", "TraceEvent", "WorkUnitEvent", "run_batch",
]
