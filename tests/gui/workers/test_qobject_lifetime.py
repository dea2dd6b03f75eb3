"""The QObjects of background work die on the GUI thread, never in the thread that did it.

The pool deletes a finished job in its own thread; whatever QObject lost its last Python
reference with the job was destroyed there, while the GUI thread was delivering that object's
queued signals. A test session crashed so (a segmentation fault in pytest-qt's event
processing after tests/gui/workers/test_pool_tasks.py). A worker deleted with ``deleteLater``
in its own QThread while the GUI thread dropped its last Python reference crashed a process in
about 1 of 4,000 runs. Here nobody keeps a reference to a job, its signals, a runner or a
worker: each object records the thread ``destroyed`` is emitted in.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable

import pytest
from PySide6.QtCore import QCoreApplication, QObject, Qt, QThreadPool

from workbench.core.runs.config import TrainConfig
from workbench.gui.workers.pool_tasks import FunctionTask, LatestRequestRunner
from workbench.gui.workers.training_worker import TrainingController

POOL_WAIT_MS = 60_000


def record_destruction(obj: QObject, threads: list[str]) -> None:
    """Append the name of the thread ``obj`` is destroyed in to ``threads``."""
    obj.destroyed.connect(lambda *_: threads.append(threading.current_thread().name),
                          Qt.ConnectionType.DirectConnection)


def run_unreferenced(make_job: Callable[[], object]) -> list[str]:
    """Start the job ``make_job`` builds, keep no reference to it or its signals, let the pool
    finish and the GUI thread deliver everything; the threads its signals died in."""
    threads: list[str] = []
    job = make_job()
    record_destruction(job.signals, threads)
    QThreadPool.globalInstance().start(job)
    del job
    assert QThreadPool.globalInstance().waitForDone(POOL_WAIT_MS)
    for _ in range(5):  # the queued release, then the deferred delete it posts
        QCoreApplication.processEvents()
        QCoreApplication.sendPostedEvents(None, 0)
        gc.collect()
    return threads


def export_job():
    from workbench.gui.workers.export_worker import ExportJob

    return ExportJob("/nonexistent/best_model.pt", "/nonexistent/model.pt")  # fails at once


def lr_finder_job():
    from workbench.gui.workers.lr_finder_worker import LrFinderJob

    return LrFinderJob(TrainConfig(data_root="/nonexistent/images", device="cpu"), 5)


def weights_download_job():
    from workbench.gui.workers.weights_download_worker import WeightsDownloadJob

    return WeightsDownloadJob("resnet18")


def device_detection_job():
    from workbench.gui.panels.device_panel import _DetectionJob

    return _DetectionJob(("cpu",))


def function_task():
    return FunctionTask(1, sum, ([1, 2],))


@pytest.mark.parametrize("make_job", [export_job, lr_finder_job, weights_download_job,
                                      device_detection_job, function_task],
                         ids=["export", "lr_finder", "weights_download", "device_detection",
                              "function_task"])
def test_a_jobs_signals_are_deleted_on_the_gui_thread(qapp, monkeypatch, make_job) -> None:
    # The download is refused at once: a closed port on this computer, no network.
    monkeypatch.setattr("workbench.core.models.building.imagenet_weights_url",
                        lambda model: "http://127.0.0.1:9/resnet18-f37072fd.pth")
    assert run_unreferenced(make_job) == [threading.main_thread().name]


def test_a_runner_nobody_keeps_is_deleted_on_the_gui_thread(qapp) -> None:
    threads: list[str] = []
    release = threading.Event()
    runner = LatestRequestRunner()
    record_destruction(runner, threads)
    runner.submit(release.wait, 5)
    del runner  # the task still queued or running must not be what keeps the runner
    gc.collect()
    release.set()
    assert QThreadPool.globalInstance().waitForDone(POOL_WAIT_MS)
    for _ in range(5):
        QCoreApplication.processEvents()
        gc.collect()
    assert threads == [threading.main_thread().name]


def test_a_training_worker_is_deleted_on_the_gui_thread_after_its_thread(qapp, tmp_path) -> None:
    threads: list[str] = []
    controller = TrainingController()
    worker = controller.start(TrainConfig(data_root=str(tmp_path / "missing"), device="cpu",
                                          output_dir=str(tmp_path / "runs")))
    record_destruction(worker, threads)
    del worker
    assert controller.wait_finished(60)  # the run fails at once: no such folder
    for _ in range(5):
        QCoreApplication.processEvents()
        QCoreApplication.sendPostedEvents(None, 0)
        gc.collect()
    assert threads == [threading.main_thread().name]
