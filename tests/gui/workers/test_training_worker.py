"""TrainingWorker and TrainingController with real tiny training runs on the CPU."""

from __future__ import annotations

import math
import time
from pathlib import Path

import shiboken6
from PySide6.QtCore import QObject, Slot

from workbench.gui.workers.training_worker import TrainingController, create_training_thread

RUN_TIMEOUT_MS = 90_000


class Recorder(QObject):
    """Collects signal arguments in the UI thread (the connections are queued)."""

    def __init__(self) -> None:
        super().__init__()
        self.events: dict[str, list[object]] = {}
        self.received_at: dict[str, list[float]] = {}

    def watch(self, source: QObject, *names: str) -> None:
        for name in names:
            self.events[name] = []
            self.received_at[name] = []
            getattr(source, name).connect(getattr(self, f"_on_{name}"))

    def _record(self, name: str, value: object) -> None:
        self.events[name].append(value)
        self.received_at[name].append(time.monotonic())

    @Slot(object)
    def _on_run_started(self, event: object) -> None:
        self._record("run_started", event)

    @Slot(object)
    def _on_step_finished(self, event: object) -> None:
        self._record("step_finished", event)

    @Slot(object)
    def _on_epoch_ended(self, event: object) -> None:
        self._record("epoch_ended", event)

    @Slot(object)
    def _on_message_logged(self, event: object) -> None:
        self._record("message_logged", event)

    @Slot(object)
    def _on_run_ended(self, event: object) -> None:
        self._record("run_ended", event)

    @Slot(str)
    def _on_errored(self, message: str) -> None:
        self._record("errored", message)

    @Slot()
    def _on_finished(self) -> None:
        self._record("finished", None)


ALL_SIGNALS = ("run_started", "step_finished", "epoch_ended", "message_logged", "run_ended",
               "errored", "finished")


# The worker's own signals are emitted in the training thread; pytest-qt's blockers must see
# signals in the UI thread, so the tests wait on the controller, which re-emits them there
# through queued connections (in order) -- the same path the window uses.


def test_worker_emits_run_events_in_order_and_every_step(qtbot, tiny_config, reraise_errors,
                                                         no_dangling_qthreads):
    controller = TrainingController()
    recorder = Recorder()
    recorder.watch(controller, *ALL_SIGNALS)
    reraise_errors(controller)

    with qtbot.waitSignals([controller.run_started, controller.epoch_ended,
                            controller.run_ended, controller.finished], order="strict",
                           timeout=RUN_TIMEOUT_MS):
        controller.start(tiny_config.replace(epochs=1))

    (thread,) = no_dangling_qthreads
    assert not controller.is_running()
    qtbot.waitUntil(lambda: not shiboken6.isValid(thread))  # deleteLater ran: nothing leaks

    start = recorder.events["run_started"][0]
    steps = recorder.events["step_finished"]
    assert start.class_names == ("circle", "cross", "square", "triangle")
    assert start.steps_per_epoch == 4  # 32 training images, batch 8
    assert [s.global_step for s in steps] == [1, 2, 3, 4]
    assert all(math.isfinite(s.loss) and s.images_per_second > 0 for s in steps)
    assert all(s.memory_allocated is None and s.process_rss for s in steps)  # a CPU run
    (end,) = recorder.events["run_ended"]
    assert end.status == "completed" and end.epochs_completed == 1
    assert Path(end.best_model_path).is_file() and Path(end.last_checkpoint_path).is_file()
    assert recorder.events["errored"] == []


def test_stop_after_first_step_cancels_without_a_result(qtbot, tiny_config, reraise_errors):
    controller = TrainingController()
    recorder = Recorder()
    recorder.watch(controller, *ALL_SIGNALS)
    reraise_errors(controller)
    controller.step_finished.connect(controller.request_stop)

    with qtbot.waitSignal(controller.finished, timeout=RUN_TIMEOUT_MS):
        controller.start(tiny_config.replace(epochs=3))

    assert not controller.is_running()
    (end,) = recorder.events["run_ended"]
    assert end.status == "cancelled"
    assert recorder.events["epoch_ended"] == []  # stopped inside the first epoch
    assert len(recorder.events["step_finished"]) < 4
    assert recorder.events["finished"] == [None]
    assert all(e.status != "completed" for e in recorder.events["run_ended"])
    assert any("Stopped on request" in m.text for m in recorder.events["message_logged"])


def test_pause_holds_the_run_and_resume_finishes_it(qtbot, tiny_config, reraise_errors):
    controller = TrainingController()
    recorder = Recorder()
    recorder.watch(controller, *ALL_SIGNALS)
    reraise_errors(controller)
    controller.start(tiny_config.replace(epochs=1))
    try:
        qtbot.waitUntil(lambda: len(recorder.events["step_finished"]) >= 1,
                        timeout=RUN_TIMEOUT_MS)
        controller.pause()
        steps_at_pause = len(recorder.events["step_finished"])
        assert controller.is_paused()
        qtbot.wait(2000)  # the step under way when pause() was called may still finish
        steps_while_paused = len(recorder.events["step_finished"])
        qtbot.wait(1000)

        assert len(recorder.events["step_finished"]) == steps_while_paused
        assert steps_while_paused <= steps_at_pause + 1 < 4 + 1
        assert recorder.events["run_ended"] == []
        with qtbot.waitSignal(controller.finished, timeout=RUN_TIMEOUT_MS):
            controller.resume()
    finally:
        controller.request_stop()  # only matters when an assertion above failed
        assert controller.wait_finished(60)
    assert [e.status for e in recorder.events["run_ended"]] == ["completed"]
    assert len(recorder.events["step_finished"]) == 4


def test_missing_folder_is_reported_through_signals(qtbot, tiny_config, tmp_path,
                                                    wait_for_thread_end):
    missing = tmp_path / "no_such_folder"
    thread, worker = create_training_thread(tiny_config.replace(data_root=str(missing)))
    recorder = Recorder()
    recorder.watch(worker, *ALL_SIGNALS)  # queued to the recorder, in the UI thread

    thread.start()
    wait_for_thread_end(thread)
    qtbot.waitUntil(lambda: len(recorder.events["finished"]) == 1, timeout=RUN_TIMEOUT_MS)

    (end,) = recorder.events["run_ended"]
    assert end.status == "failed"
    assert "data_root" in end.error and str(missing) in end.error
    errors = [m.text for m in recorder.events["message_logged"] if m.level == "error"]
    assert errors and str(missing) in errors[-1]
    assert recorder.events["run_started"] == [] and recorder.events["errored"] == []


def test_controller_refuses_a_second_run_while_one_is_running(qtbot, tiny_config):
    controller = TrainingController()
    controller.start(tiny_config.replace(epochs=1, data_root=str(Path(tiny_config.data_root))))
    try:
        try:
            controller.start(tiny_config)
        except RuntimeError as exc:
            assert "already" in str(exc)
        else:
            raise AssertionError("a second run was started")
    finally:
        controller.request_stop()
        assert controller.wait_finished(60)
