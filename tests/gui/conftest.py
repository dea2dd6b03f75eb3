"""GUI test fixtures: no thread outlives its test, errors fail tests, settings stay in tmp_path.

``no_dangling_qthreads`` follows napari's ``_dangling_qthreads``: every ``QThread.start`` during
a test is recorded, and a thread still running when the test ends fails it.
"""

from __future__ import annotations

import gc
import signal
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import shiboken6
from PySide6.QtCore import QCoreApplication, QObject, QSettings, QThread, QThreadPool, QTimer, Slot

from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import Callback, EpochEnd, RunEnd, RunStart
from workbench.gui.ui_garbage_collector import UiGarbageCollector, start_ui_garbage_collector

THREAD_GRACE_S = 2.0
POOL_WAIT_MS = 60_000
_LEAKED_THREADS: list[QThread] = []


@pytest.fixture(autouse=True)
def ui_garbage_collector(qapp) -> Iterator[UiGarbageCollector]:
    """The app's garbage-collection policy, started as the app starts it: automatic collection
    off, collections on a UI-thread timer (see workbench/gui/ui_garbage_collector.py). After
    the test its garbage is collected here, on the UI thread, and automatic collection is given
    back for the tests that have no window. What survives is frozen (as the app freezes what
    lives for the whole session): the next test's collections then walk only what that test
    made, not the hundreds of thousands of objects torch and Qt keep."""
    collector = start_ui_garbage_collector()
    yield collector
    collector.stop()
    gc.freeze()


@pytest.fixture(autouse=True)
def default_child_signal() -> None:
    """SIGCHLD handled as it is in the app. The app iterates data loaders only off the UI
    thread, so torch never installs its SIGCHLD handler there; the core tests iterate them on
    this process's main thread, which installs it for the rest of the session. Left in place,
    it raises a loader process's exit inside whatever the UI thread is running at that moment,
    a pyqtgraph paint for instance, which PySide cannot unwind: the whole process crashed with
    a segmentation fault. Loader processes that die are still found by the loader itself
    (its timeout and liveness checks), as in the app."""
    if signal.getsignal(signal.SIGCHLD) not in (signal.SIG_DFL, None):
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)


@pytest.fixture(autouse=True)
def no_dangling_qthreads(qapp, monkeypatch) -> Iterator[list[QThread]]:
    """Fail a test that leaves a QThread running; yields the threads started during the test."""
    started: list[QThread] = []
    original_start = QThread.start

    def recording_start(self: QThread, *args: object) -> None:
        started.append(self)
        original_start(self, *args)

    monkeypatch.setattr(QThread, "start", recording_start)
    yield started
    running = _wait_for_threads(started, THREAD_GRACE_S)
    if running:
        # Keep them referenced: destroying a running QThread would abort the whole session.
        _LEAKED_THREADS.extend(t for t in started if shiboken6.isValid(t) and t.isRunning())
        pytest.fail(f"test left {len(running)} QThread(s) running: {running}")


def _wait_for_threads(threads: list[QThread], seconds: float) -> list[str]:
    deadline = time.monotonic() + seconds
    while True:
        running = [t.objectName() or repr(t) for t in threads
                   if shiboken6.isValid(t) and t.isRunning()]
        if not running or time.monotonic() > deadline:
            return running
        QCoreApplication.processEvents()
        time.sleep(0.01)


@pytest.fixture(autouse=True)
def drained_thread_pool(qapp) -> Iterator[None]:
    """Every test leaves the global pool idle (scans, previews, exports, device detection)."""
    yield
    assert QThreadPool.globalInstance().waitForDone(POOL_WAIT_MS), "pool jobs still running"
    QCoreApplication.processEvents()


@pytest.fixture(autouse=True)
def isolated_settings(qapp, tmp_path: Path) -> Iterator[Path]:
    """QSettings of this test live in tmp_path under a unique organisation, never the user's."""
    folder = tmp_path / "qsettings"
    previous = (QCoreApplication.organizationName(), QCoreApplication.applicationName(),
                QSettings.defaultFormat())
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(folder))
    QCoreApplication.setOrganizationName(f"workbench-test-{uuid.uuid4().hex[:8]}")
    QCoreApplication.setApplicationName("workbench-test")
    yield folder
    QCoreApplication.setOrganizationName(previous[0])
    QCoreApplication.setApplicationName(previous[1])
    QSettings.setDefaultFormat(previous[2])


class _ErrorCollector(QObject):
    """Lives in the UI thread, so ``errored`` from a worker thread is queued to it."""

    def __init__(self) -> None:
        super().__init__()
        self.errors: list[str] = []

    @Slot(str)
    def collect(self, message: str) -> None:
        self.errors.append(message)
        raise AssertionError(f"worker reported an error: {message}")


@pytest.fixture
def reraise_errors(qapp) -> Iterator[Callable[[object], None]]:
    """``reraise_errors(obj)`` connects ``obj.errored`` so that a reported error fails the test."""
    collector = _ErrorCollector()

    def connect(source: object) -> None:
        source.errored.connect(collector.collect)

    yield connect
    assert not collector.errors, collector.errors


@pytest.fixture
def shapes_dataset(tmp_path: Path) -> Path:
    """Four shape classes, 8 train and 4 val images each, 40x32 pixels."""
    return write_shape_dataset(tmp_path / "shapes", per_class=8, size=(40, 32),
                               layout="train_val", val_per_class=4)


@pytest.fixture
def tiny_config(shapes_dataset: Path, tmp_path: Path) -> TrainConfig:
    """A five-crop run of the small CNN that takes about a second on a CPU (a ResNet18 writes
    90 MB checkpoints; tests about ResNet18 itself say so)."""
    return TrainConfig(
        data_root=str(shapes_dataset), model="small_cnn", weights="none", finetune="full",
        crop_mode="five_crop", resize_size=32, crop_size=28, batch_size=8, epochs=2,
        workers=0, output_dir=str(tmp_path / "runs"), device="cpu", amp=False,
        channels_last=False,
    )


@pytest.fixture
def wait_for_thread_end(qtbot) -> Callable[..., None]:
    """``wait_for_thread_end(thread)``: wait until it has finished (or was deleted after)."""

    def wait(thread: QThread, timeout_ms: int = 30_000) -> None:
        qtbot.waitUntil(lambda: not shiboken6.isValid(thread) or thread.isFinished(),
                        timeout=timeout_ms)

    return wait


class TickCounter:
    """Counts the ticks of a 10 ms timer on the UI thread while ``timer`` runs."""

    def __init__(self) -> None:
        self.ticks = 0
        self.timer = QTimer()
        self.timer.setInterval(10)
        self.timer.timeout.connect(self._tick)

    def _tick(self) -> None:
        self.ticks += 1


@pytest.fixture
def ui_ticks() -> Iterator[TickCounter]:
    """A stopped 10 ms UI-thread timer that counts its ticks; the test starts it."""
    counter = TickCounter()
    yield counter
    counter.timer.stop()


@dataclass
class FinishedRun(Callback):
    """A run's events as the window would have received them."""

    start: RunStart | None = None
    epochs: list[EpochEnd] = field(default_factory=list)
    end: RunEnd | None = None

    def on_run_start(self, event):
        self.start = event

    def on_epoch_end(self, event):
        self.epochs.append(event)

    def on_run_end(self, event):
        self.end = event


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory) -> FinishedRun:
    """Two epochs of the small CNN on four shape classes (3 val images each), on the CPU."""
    root = tmp_path_factory.mktemp("results-run")
    data = write_shape_dataset(root / "shapes", per_class=8, size=(32, 32), layout="train_val",
                               val_per_class=3)
    config = TrainConfig(
        data_root=str(data), model="small_cnn", weights="none", crop_mode="five_crop",
        resize_size=32, crop_size=28, batch_size=8, epochs=2, workers=0, lr=0.05,
        output_dir=str(root / "runs"), device="cpu", amp=False, cache_images=False,
        finetune="full",
    )
    from workbench.core.training.engine import train  # torch only for the tests that train

    run = FinishedRun()
    train(config, run)
    assert run.end is not None and run.end.status == "completed", run.end
    return run
