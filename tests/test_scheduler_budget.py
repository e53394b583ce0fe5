"""The scheduler's budget decisions, without an engine: a batch's step bytes run, wait, split or fail."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from scripted_engine import ScriptedComponent

from omni_cli.engine import AdmissionError, MemoryBudget
from omni_cli.engine.scheduler import Entry, Scheduler, Verdict
from omni_cli.loops import WorkPlan
from omni_cli.spec.stream import RequestStatus


def entries(*step_bytes: int) -> list[Entry]:
    loop = SimpleNamespace(component=ScriptedComponent())
    return [Entry(WorkPlan("scripted", 0, ("k",), n, {}), 0, SimpleNamespace(request_id=f"r{i}"), loop, None)
            for i, n in enumerate(step_bytes)]


def test_a_batch_that_fits_is_reserved_and_refunded():
    scheduler = Scheduler("round-robin", 8, MemoryBudget(100))
    verdict = scheduler.reserve_step(entries(30, 40), calls_in_flight=False)
    assert (verdict.verdict, verdict.reserved, scheduler.budget.reserved) == (Verdict.RUN, 70, 70)
    scheduler.refund_step(verdict.reserved, None)
    assert scheduler.budget.reserved == 0 and scheduler.budget.peak_reserved == 70


@pytest.mark.parametrize("in_flight, expected", [(True, Verdict.WAIT), (False, Verdict.SPLIT)])
def test_a_batch_too_big_together_waits_for_refunds_or_splits_in_halves(in_flight, expected):
    scheduler = Scheduler("round-robin", 8, MemoryBudget(100))
    verdict = scheduler.reserve_step(entries(40, 40, 40), calls_in_flight=in_flight)
    assert verdict.verdict is expected and scheduler.budget.reserved == 0  # nothing held for a batch not run
    assert verdict.split_at == (1 if expected is Verdict.SPLIT else 0)


def test_one_step_that_can_never_fit_fails_with_the_figures():
    scheduler = Scheduler("round-robin", 8, MemoryBudget(1 << 20))
    verdict = scheduler.reserve_step(entries(2 << 20), calls_in_flight=False)
    assert verdict.verdict is Verdict.FAIL
    assert verdict.error == "step needs 2.0 MiB but only 1.0 MiB of 1.0 MiB is free"


def test_admission_refuses_a_request_that_can_never_fit_and_remove_refunds_what_it_held():
    scheduler = Scheduler("round-robin", 8, MemoryBudget(1000))
    big = SimpleNamespace(request_id="big", resident_bytes=900, peak_step_bytes=200, reserved_bytes=0)
    with pytest.raises(AdmissionError, match="request big needs"):
        scheduler.add(big)
    small = SimpleNamespace(request_id="small", resident_bytes=300, peak_step_bytes=100, reserved_bytes=0,
                            status=RequestStatus.QUEUED, wired=SimpleNamespace(states=[]))
    scheduler.add(small)
    decision = scheduler.schedule(set())
    assert decision.admitted == [small] and scheduler.budget.reserved == 300
    scheduler.remove(small)
    assert scheduler.budget.reserved == 0 and small.reserved_bytes == 0 and not scheduler.running
