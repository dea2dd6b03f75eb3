"""Open an installed Workbench's window offscreen and check that it has its own files.

Run it with the Python of an environment where the built wheel is installed, from outside the
checkout (``.ci/run`` does): it checks that ``workbench`` is imported from that environment,
not from a checkout, that the icon and the stylesheet come from inside the installed package,
and that the window shows the icon and applies the stylesheet. Exit status 1 names what failed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

ERROR_RED = "#c0392b"  # resources/style.qss: QLabel[role="error"]


def main() -> int:
    from PySide6.QtGui import QPalette
    from PySide6.QtWidgets import QLabel

    import workbench
    from workbench.gui import resources
    from workbench.gui.app import create_application
    from workbench.gui.window.main_window import MainWindow

    environment = Path(sys.prefix).resolve()
    package = Path(workbench.__file__).resolve().parent
    problems = []
    if not package.is_relative_to(environment):
        problems.append(f"workbench was imported from {package}, not from {environment}")
    if resources.RESOURCES_DIR != resources.INSTALLED_RESOURCES:
        problems.append(f"the app's files were looked for in {resources.RESOURCES_DIR}, not in "
                        f"the installed package ({resources.INSTALLED_RESOURCES})")
    app = create_application([])
    window = MainWindow(build_now=False)
    window.show()
    app.processEvents()
    if window.windowIcon().isNull() or app.windowIcon().isNull():
        problems.append("the window has no icon")
    sheet = (resources.INSTALLED_RESOURCES / "style.qss")
    if not sheet.is_file() or app.styleSheet() != sheet.read_text(encoding="utf-8"):
        problems.append(f"the application's stylesheet is not {sheet}")
    label = QLabel("error", window)
    label.setProperty("role", "error")
    label.ensurePolished()
    colour = label.palette().color(QPalette.ColorRole.WindowText).name()
    if colour != ERROR_RED:
        problems.append(f"the stylesheet does not apply: an error label is {colour}, "
                        f"not {ERROR_RED}")
    window.close()
    for problem in problems:
        print(f"installed window check: {problem}", file=sys.stderr)
    if not problems:
        print(f"installed window check: workbench {workbench.__version__} from {package}: "
              f"window opened with its icon and stylesheet ({sheet})")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
