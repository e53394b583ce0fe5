"""The Executor seam: run_batch isolates a broken request; calls in flight give the inline outputs, one call
per component at a time, and an output that comes back for a request ended meanwhile is dropped."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from omni_cli.engine import BatchOutcome, Engine, Executor, InlineExecutor, run_batch
from omni_cli.spec import SpeakRequest
from omni_cli.spec.stream import RequestDone, RequestStatus


class Doubler:
    def __init__(self, bad=()):
        self.bad, self.calls = set(bad), []

    def run(self, kind, inputs):
        self.calls.append(list(inputs))
        if self.bad & set(inputs):
            raise ValueError("bad input")
        return [2 * x for x in inputs]


def test_run_batch_reruns_a_raising_batch_one_by_one_to_find_the_broken_input():
    comp = Doubler(bad={3})
    outputs = run_batch(comp, "k", [1, 3, 5])
    assert outputs[0] == 2 and outputs[2] == 10 and isinstance(outputs[1], ValueError)
    assert comp.calls == [[1, 3, 5], [1], [3], [5]]


def test_run_batch_fails_every_input_of_a_component_that_returns_the_wrong_count():
    class Short:
        def run(self, kind, inputs):
            return inputs[:-1]

    outputs = run_batch(Short(), "k", [1, 2])
    assert all(isinstance(o, RuntimeError) and "1 outputs for 2" in str(o) for o in outputs)


def test_inline_executor_returns_a_done_future_with_the_call_timed():
    future = InlineExecutor(Doubler()).submit("k", [4])
    assert future.done()
    outcome = future.result()
    assert outcome.outputs == [8] and outcome.dur_s >= 0 and outcome.start_s > 0


class OneThread(Executor):
    """A test executor: each component's calls run in a worker thread, results collected later."""

    def __init__(self, component, log):
        self.component, self.log = component, log
        self.pool = ThreadPoolExecutor(1)
        self.pending = 0  # submitted and not yet finished (queued in the pool counts)
        self.lock = threading.Lock()

    def submit(self, kind, inputs) -> Future:
        with self.lock:
            self.pending += 1
            self.log.append(self.pending)

        def call():
            try:
                start = time.perf_counter()
                outputs = run_batch(self.component, kind, inputs)
                return BatchOutcome(outputs, start, time.perf_counter() - start)
            finally:  # before the future is done, so the engine can never see a done call still counted
                with self.lock:
                    self.pending -= 1
        return self.pool.submit(call)

    def close(self):
        self.pool.shutdown()


def test_calls_in_flight_give_exactly_the_inline_outputs(toy):
    requests = [SpeakRequest(f"Sentence number {i} in flight.", seed=i, request_id=f"f{i}") for i in range(4)]

    def run(executors):
        engine = Engine(toy, executors=executors, max_batch=2)  # 4 requests: two batches a component each tick
        handles = [engine.submit(r, collect=True) for r in requests]
        done = [e for e in engine.events() if isinstance(e, RequestDone)]
        engine.close()
        assert [e.status for e in done] == [RequestStatus.FINISHED] * 4
        assert engine.budget.reserved == 0 and engine.is_idle
        return [h.result() for h in handles], engine

    inline, _ = run(None)
    log: list[int] = []
    threaded, engine = run({name: OneThread(c, log) for name, c in toy.components.items()})
    for a, b in zip(inline, threaded, strict=True):
        assert a.tokens == b.tokens and np.array_equal(a.samples, b.samples) and a.samples.size > 0
    assert log and max(log) == 1  # never a second call submitted to a component before its first came back
    assert engine.stats.work_units == sum(sum(r.loops[k].num_steps for k in r.loops) for r in threaded)


class HeldExecutor(Executor):
    """Each call waits until the test lets it finish: what a slow worker looks like to the engine."""

    def __init__(self, component):
        self.component, self.held = component, []

    def submit(self, kind, inputs) -> Future:
        future: Future = Future()
        self.held.append((future, kind, inputs))
        return future

    def finish_all(self):
        held, self.held = self.held, []
        for future, kind, inputs in held:
            future.set_result(BatchOutcome(run_batch(self.component, kind, inputs), time.perf_counter(), 0.0))


def test_a_request_cancelled_while_its_step_is_in_flight_is_not_advanced_by_that_step():
    from scripted_engine import ScriptedComponent, ScriptedLoop, drain, scripted_program

    class Watched(ScriptedLoop):
        def __init__(self, component):
            super().__init__(component, steps=3)
            self.after_end: list[str] = []

        def advance(self, state, plan, output):
            if state.request_id in self.aborted:
                self.after_end.append(state.request_id)
            return super().advance(state, plan, output)

    component = ScriptedComponent()
    loop = Watched(component)
    program = scripted_program(loop)
    program.components, program.roles = {"scripted": component}, {"scripted": component}
    executor = HeldExecutor(component)
    engine = Engine(program, executors={"scripted": executor})
    # the held call comes back just after the cancel is reaped, within the same tick
    engine.subscribe(lambda e: executor.finish_all() if e.event == "request" and e.phase == "cancelled" else None)
    handles = [engine.submit(SpeakRequest("x", request_id=f"q{i}")) for i in range(2)]
    engine.step()  # both requests' first step goes out as one call, and is held
    assert len(executor.held) == 1 and engine.budget.reserved > 0
    handles[1].cancel()
    engine.step()  # reaps the cancel while the call is in flight, then folds the call
    while not engine.is_idle:
        engine.step()
        executor.finish_all()
    done = {e.request_id: e.status for e in drain(engine) if isinstance(e, RequestDone)}
    assert done == {"q0": RequestStatus.FINISHED, "q1": RequestStatus.CANCELLED}
    assert loop.aborted == ["q1"] and loop.after_end == []  # its held step's output was dropped, not folded
    assert engine.budget.reserved == 0
