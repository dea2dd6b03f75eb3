"""Screenshot of the real window after a short real training run on the demo dataset.

Usage (no display needed)::

    xvfb-run -s "-screen 0 1920x1080x24" python -m workbench.gui.screenshot docs.png

It opens the MainWindow, sized from the screen as a user's would be (so the screen size given to
Xvfb is the screen shown), on the bundled demo dataset, trains the demo config for two short
epochs so the plots have data, selects a training image so the preview shows its crops, shows
the Training tab and saves the window to the given PNG. ``--all`` also saves the Settings and
Results tabs next to it (``docs-settings.png``, ``docs-results.png``). Settings and runs go to
a temporary folder; the user's own settings are not touched.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from PySide6.QtCore import QEventLoop, QSettings, QTimer, SignalInstance
from PySide6.QtWidgets import QApplication

from workbench.gui.app import create_application
from workbench.gui.window.main_window import MainWindow
from workbench.gui.window.settings_store import SettingsStore

TRAIN_TIMEOUT_S = 600


def wait_for_signal(signal: SignalInstance, timeout_s: float) -> bool:
    """Run the event loop until ``signal`` fires; False on timeout."""
    loop = QEventLoop()
    fired: list[bool] = []

    def on_fired(*_args: object) -> None:
        fired.append(True)
        loop.quit()

    signal.connect(on_fired)
    QTimer.singleShot(int(timeout_s * 1000), loop.quit)
    loop.exec()
    signal.disconnect(on_fired)
    return bool(fired)


def wait_until(predicate: Callable[[], bool], timeout_s: float) -> bool:
    """Process events until ``predicate()`` is true; False on timeout."""
    loop = QEventLoop()
    timer = QTimer()
    timer.setInterval(50)
    timer.timeout.connect(lambda: loop.quit() if predicate() else None)
    timer.start()
    QTimer.singleShot(int(timeout_s * 1000), loop.quit)
    if not predicate():
        loop.exec()
    timer.stop()
    return predicate()


def settle(milliseconds: int = 400) -> None:
    """Let pending paints and timers (the plot refresh) run."""
    loop = QEventLoop()
    QTimer.singleShot(milliseconds, loop.quit)
    loop.exec()


def prepare_window(workdir: Path) -> MainWindow:
    """A window with throwaway settings, showing the demo dataset and demo config."""
    from workbench.core.data.generated.demo_data import demo_config, ensure_demo_dataset

    settings = QSettings(str(workdir / "settings.ini"), QSettings.Format.IniFormat)
    window = MainWindow(settings=SettingsStore(settings))
    window.ask_before_closing_during_training = False
    window.show()
    root = ensure_demo_dataset()
    config = demo_config(root, output_dir=str(workdir / "runs")).replace(
        epochs=2, max_steps_per_epoch=10)
    window.apply_config(config)
    if window.dataset_panel is None or not wait_for_signal(
            window.dataset_panel.dataset_scanned, 60):
        raise RuntimeError("the demo dataset was not scanned")
    window.start_background_tasks()
    wait_for_signal(window.device_panel.devices_detected, 120)
    return window


def train_and_select_image(window: MainWindow) -> None:
    """Train the short demo run, then pick the first thumbnail so the preview has crops."""
    if not window.start_training():
        raise RuntimeError(f"cannot start: {window.config_form.problems()}")
    if not wait_for_signal(window.controller.run_ended, TRAIN_TIMEOUT_S):
        raise RuntimeError("training did not finish in time")
    wait_until(lambda: not window.controller.is_running(), 60)
    window.dataset_panel.thumbnails.select_row(0)
    if not wait_for_signal(window.preview_panel.preview_ready, 60):
        raise RuntimeError("the preview did not appear")


def save_tab(window: MainWindow, page: object, path: Path) -> None:
    """Show ``page`` in the right-hand tabs and save the whole window to ``path``."""
    window.right_tabs.setCurrentWidget(page)
    settle()
    if not window.grab().save(str(path)):
        raise RuntimeError(f"cannot write {path}")
    print(f"wrote {path}")


def main(argv: Sequence[str] | None = None) -> int:
    """Take the screenshot(s); returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m workbench.gui.screenshot")
    parser.add_argument("out", type=Path, help="PNG file to write")
    parser.add_argument("--all", action="store_true", help="also save Settings and Results")
    args = parser.parse_args(argv)
    app: QApplication = create_application()
    with tempfile.TemporaryDirectory(prefix="workbench-screenshot-") as workdir:
        window = prepare_window(Path(workdir))
        train_and_select_image(window)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        save_tab(window, window.training_tab, args.out)
        if args.all:
            stem = args.out.with_suffix("")
            save_tab(window, window.right_tabs.widget(0), Path(f"{stem}-settings.png"))
            save_tab(window, window.results_panel, Path(f"{stem}-results.png"))
        window.close()
        app.processEvents()
    return 0


if __name__ == "__main__":
    sys.exit(main())
