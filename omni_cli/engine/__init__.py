"""The engine: requests, admission, scheduling, cancellation, trace events."""

from .admission import AdmissionError, MemoryBudget
from .engine import Engine
from .request import RequestHandle, RequestResult
from .scheduler import POLICIES
from .stats import EngineStats
from .trace import RequestEvent, TraceEvent, WorkUnitEvent

__all__ = [
    "POLICIES", "AdmissionError", "Engine", "EngineStats", "MemoryBudget", "RequestEvent", "RequestHandle",
    "RequestResult", "TraceEvent", "WorkUnitEvent",
]
