"""Start the Workbench window: ``workbench`` (no arguments), ``--demo`` or ``--folder PATH``.

The window is shown before torch is imported (nothing imported here loads it) and before
pyqtgraph is; the dataset panel and the plots are added right after the first paint, and device
detection, which needs torch, starts in the thread pool once the window is on screen.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import QThreadPool, QTimer
from PySide6.QtWidgets import QApplication

from workbench.core.warnings import quiet_covered_library_warnings
from workbench.gui.platform_libraries import check_platform_libraries
from workbench.gui.resources import app_icon, stylesheet
from workbench.gui.ui_garbage_collector import start_ui_garbage_collector
from workbench.gui.window.main_window import MainWindow

APP_NAME = "Workbench"
ORGANIZATION = "Workbench"
SHUTDOWN_WAIT_MS = 30_000


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options of the window."""
    parser = argparse.ArgumentParser(prog="workbench", description="Workbench training window")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--demo", action="store_true",
                       help="generate the bundled shapes dataset and open it with a demo config")
    group.add_argument("--folder", metavar="PATH", help="open this image folder")
    parser.add_argument("--startup-report", action="store_true",
                        help="print seconds to first window and whether torch was loaded, "
                             "wait for device detection, then quit (a smoke test)")
    return parser.parse_args(list(argv) if argv is not None else None)


def create_application(argv: Sequence[str] | None = None) -> QApplication:
    """The QApplication with name, organisation (QSettings keys), icon and style sheet."""
    app = QApplication.instance() or QApplication([sys.argv[0], *(argv or [])])
    app.setApplicationName(APP_NAME)
    app.setOrganizationName(ORGANIZATION)
    app.setWindowIcon(app_icon())
    app.setStyleSheet(stylesheet())  # "" (the platform look) when the file is missing
    return app


def main(argv: Sequence[str] | None = None) -> int:
    """Run the window until it is closed; returns the exit code."""
    args = parse_args(argv)
    quiet_covered_library_warnings()
    problem = check_platform_libraries()
    if problem:  # Qt would stop at the first missing library, naming only that one
        print(problem, file=sys.stderr)
        return 1
    app = create_application()
    start_ui_garbage_collector()  # collections on this thread only, from now on
    window = MainWindow(build_now=False)
    window.show()
    app.processEvents()  # paint now, before anything slow runs
    if args.startup_report:
        _print_startup_report(window)
    # After the first paint, in this order: the pyqtgraph panels, the folder asked for (so the
    # last session's folder is not scanned for nothing), then device detection.
    QTimer.singleShot(0, window.build_plot_panels)
    if args.demo:
        QTimer.singleShot(0, lambda: _open_demo(window))
    elif args.folder:
        folder = str(Path(args.folder).expanduser())
        QTimer.singleShot(0, lambda: window.open_folder(folder))
    QTimer.singleShot(0, window.start_background_tasks)
    code = app.exec()
    # Scans, previews and exports still in the pool finish before the interpreter goes.
    QThreadPool.globalInstance().waitForDone(SHUTDOWN_WAIT_MS)
    return code


def _open_demo(window: MainWindow) -> None:
    from workbench.core.data.generated.demo_data import demo_config, ensure_demo_dataset

    root = ensure_demo_dataset()
    # A desktop launch may start in any folder; keep demo runs where the user will find them.
    config = demo_config(root, output_dir=str(Path.home() / "workbench-runs"))
    window.apply_config(config)
    window.open_folder(str(root))


def _print_startup_report(window: MainWindow) -> None:
    report = {
        "seconds_to_window": round(_seconds_since_process_start(), 3),
        "window_visible": window.isVisible(),
        "torch_loaded": "torch" in sys.modules,
        "automatic_garbage_collection": gc.isenabled(),
    }
    print(json.dumps(report), flush=True)

    def devices_detected(_choices: object) -> None:
        detail = {"seconds_to_devices": round(_seconds_since_process_start(), 3),
                  "device_choice": window.device_panel.choice_text()}
        print(json.dumps(detail), flush=True)
        window.close()

    window.device_panel.devices_detected.connect(devices_detected)
    QTimer.singleShot(120_000, window.close)


def _seconds_since_process_start() -> float:
    try:
        import psutil

        return time.time() - psutil.Process().create_time()
    except Exception:
        return time.perf_counter()


if __name__ == "__main__":
    sys.exit(main())
