"""Benchmarks above the engine: workloads run through one engine, the suites `omni bench` runs, targets."""

from .recording import recording_cost
from .reference import reference_suite
from .suites import greedy_variant, process_timings, standard_suite
from .targets import targets
from .workload import BenchResult, PlaybackClock, Workload, make_text, run_workload

__all__ = ["BenchResult", "PlaybackClock", "Workload", "greedy_variant", "make_text", "process_timings", "recording_cost",
           "reference_suite", "run_workload", "standard_suite", "targets"]
