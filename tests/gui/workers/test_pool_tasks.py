"""LatestRequestRunner and FunctionTask: latest request wins, errors become signals."""

from __future__ import annotations

import threading
import time

import pytest
from PySide6.QtCore import QThreadPool

from workbench.gui.workers.pool_tasks import FunctionTask, LatestRequestRunner


@pytest.fixture
def single_thread_pool():
    """A pool of one thread, so queued order is deterministic."""
    pool = QThreadPool()
    pool.setMaxThreadCount(1)
    yield pool
    assert pool.waitForDone(10_000)


def slow_echo(value: int, seconds: float = 0.15) -> int:
    time.sleep(seconds)
    return value


def slow_failure(message: str) -> None:
    time.sleep(0.1)
    raise ValueError(message)


def test_only_the_latest_of_three_rapid_requests_is_emitted(qtbot):
    runner = LatestRequestRunner()
    results: list[object] = []
    failures: list[str] = []
    runner.result_ready.connect(results.append)
    runner.failed.connect(failures.append)

    with qtbot.waitSignal(runner.result_ready, timeout=5000) as blocker:
        ids = [runner.submit(slow_echo, value) for value in (1, 2, 3)]
    assert runner.wait_for_done(5000)
    qtbot.wait(100)  # deliver any queued outcome of the older requests

    assert ids == [1, 2, 3]
    assert blocker.args == [3]
    assert results == [3]
    assert failures == []


def test_queued_stale_request_never_runs(qtbot, single_thread_pool):
    runner = LatestRequestRunner(pool=single_thread_pool)
    started = threading.Event()
    release = threading.Event()
    calls: list[int] = []

    def blocking(value: int) -> int:
        calls.append(value)
        started.set()
        assert release.wait(5)
        return value

    runner.submit(blocking, 1)
    assert started.wait(5)
    runner.submit(blocking, 2)  # queued behind 1, superseded by 3 before it starts
    with qtbot.waitSignal(runner.result_ready, timeout=5000) as blocker:
        runner.submit(blocking, 3)
        release.set()
    assert runner.wait_for_done(5000)

    assert calls == [1, 3]
    assert blocker.args == [3]


def test_failure_emits_the_message_and_no_result(qtbot):
    runner = LatestRequestRunner()
    with qtbot.assertNotEmitted(runner.result_ready), qtbot.waitSignal(
        runner.failed, timeout=5000
    ) as blocker:
        runner.submit(slow_failure, "photo.jpg: cannot identify image file")
    assert blocker.args == ["photo.jpg: cannot identify image file"]
    assert runner.wait_for_done(5000)


def test_failure_of_a_superseded_request_is_dropped(qtbot):
    runner = LatestRequestRunner()
    failures: list[str] = []
    runner.failed.connect(failures.append)
    with qtbot.waitSignal(runner.result_ready, timeout=5000) as blocker:
        runner.submit(slow_failure, "old request")
        runner.submit(slow_echo, 7, 0.3)
    assert runner.wait_for_done(5000)
    qtbot.wait(100)
    assert blocker.args == [7]
    assert failures == []


def test_cancel_drops_the_running_request(qtbot):
    runner = LatestRequestRunner()
    with qtbot.assertNotEmitted(runner.result_ready, wait=200), qtbot.assertNotEmitted(
        runner.failed
    ):
        runner.submit(slow_echo, 1)
        runner.cancel()
        assert runner.wait_for_done(5000)
    assert not runner.is_busy()


def test_wait_for_done_times_out_while_a_task_runs(single_thread_pool):
    runner = LatestRequestRunner(pool=single_thread_pool)
    release = threading.Event()
    runner.submit(release.wait, 5)
    assert runner.is_busy()
    assert runner.wait_for_done(50) is False
    release.set()
    assert runner.wait_for_done(5000) is True
    assert not runner.is_busy()


def test_function_task_reports_its_request_id(qtbot):
    task = FunctionTask(41, sum, ([1, 2, 3],))
    outcomes: list[tuple[str, list[object]]] = []
    task.signals.succeeded.connect(lambda *args: outcomes.append(("succeeded", list(args))))
    task.signals.finished.connect(lambda *args: outcomes.append(("finished", list(args))))
    with qtbot.waitSignals(
        [task.signals.succeeded, task.signals.finished], order="strict", timeout=5000
    ):
        QThreadPool.globalInstance().start(task)
    assert outcomes == [("succeeded", [41, 6]), ("finished", [41])]


def test_function_task_names_an_exception_without_message(qtbot):
    def raise_bare() -> None:
        raise KeyError

    task = FunctionTask(5, raise_bare)
    with qtbot.waitSignal(task.signals.failed, timeout=5000) as blocker:
        QThreadPool.globalInstance().start(task)
    assert blocker.args == [5, "KeyError"]
