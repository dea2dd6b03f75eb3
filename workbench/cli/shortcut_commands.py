"""``workbench shortcut``: a menu entry that starts the window, with Workbench's icon.

Linux (and other freedesktop systems): ``resources/workbench.desktop`` is written to
``$XDG_DATA_HOME/applications`` (``~/.local/share/applications``) with ``Exec`` set to this
installation's launcher and ``Icon`` to the icon copied into the user's hicolor theme folder.
Windows: a Start-menu shortcut (``Workbench.lnk``) made by the Windows Script Host through
PowerShell, with the icon converted to ``.ico``. Elsewhere (macOS) it says why not and what to
do instead. ``--remove`` takes the entry away again.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ENTRY_NAME = "workbench.desktop"
ICON_NAMES = ("workbench.svg", "workbench.png")


def register(sub: argparse._SubParsersAction) -> None:
    shortcut = sub.add_parser(
        "shortcut", help="add Workbench to the applications menu (Linux) or the Start menu "
                         "(Windows), with its icon")
    shortcut.add_argument("--remove", action="store_true",
                          help="remove the menu entry (and its icon) instead")
    shortcut.set_defaults(handler=_cmd_shortcut)


def _cmd_shortcut(args: argparse.Namespace) -> int:
    if sys.platform == "win32":
        return _windows_shortcut(args.remove)
    if sys.platform == "darwin":
        print("workbench shortcut: macOS has no menu entries of this kind; start Workbench "
              "with `workbench` in a terminal, or keep it in the Dock once it runs",
              file=sys.stderr)
        return 2
    return _freedesktop_entry(args.remove)


# ---------------------------------------------------------------- Linux and other freedesktops
def data_home() -> Path:
    """``$XDG_DATA_HOME`` (an absolute path), else ``~/.local/share``, as the spec says."""
    value = os.environ.get("XDG_DATA_HOME", "")
    return Path(value) if os.path.isabs(value) else Path.home() / ".local" / "share"


def launcher() -> list[str]:
    """The command that opens the window from this installation: its ``workbench-gui``
    script where there is one, else this Python running ``-m workbench``."""
    scripts = Path(sysconfig.get_path("scripts"))
    for name in ("workbench-gui", "workbench"):
        path = scripts / name
        if path.is_file() and os.access(path, os.X_OK):
            return [str(path)]
    return [sys.executable, "-m", "workbench"]


def exec_value(argv: list[str]) -> str:
    """``argv`` as a desktop entry's ``Exec`` value: an argument with a space or a reserved
    character is double-quoted, with ``"``, `` ` ``, ``$`` and ``\\`` escaped inside."""
    quoted = []
    for arg in argv:
        if any(ch in arg for ch in ' \t\n"\'\\><~|&;$*?#()`'):
            escaped = "".join(f"\\{ch}" if ch in '"`$\\' else ch for ch in arg)
            arg = f'"{escaped}"'
        # a literal % is written %% in Exec (field codes start with %)
        quoted.append(arg.replace("%", "%%"))
    return " ".join(quoted)


def desktop_entry(template: str, exec_line: str, icon: Path) -> str:
    """The template with this installation's ``Exec`` and the icon file's path."""
    lines = []
    for line in template.splitlines():
        if line.startswith("Exec="):
            line = f"Exec={exec_line}"
        elif line.startswith("Icon="):
            line = f"Icon={icon}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def _freedesktop_entry(remove: bool) -> int:
    from workbench.gui.resources import resource_path

    entry = data_home() / "applications" / ENTRY_NAME
    icons = {name: data_home() / "icons" / "hicolor" / folder / "apps" / name
             for name, folder in zip(ICON_NAMES, ("scalable", "256x256"), strict=True)}
    if remove:
        removed = [path for path in (entry, *icons.values()) if path.is_file()]
        for path in removed:
            path.unlink()
        print(f"removed {entry}" if entry in removed else f"no menu entry at {entry}")
        return 0
    template = resource_path(ENTRY_NAME)
    if not template.is_file():
        print(f"workbench shortcut: the entry's template {template} is missing from this "
              "installation", file=sys.stderr)
        return 1
    try:
        for name, target in icons.items():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(resource_path(name), target)
        entry.parent.mkdir(parents=True, exist_ok=True)
        text = desktop_entry(template.read_text(encoding="utf-8"), exec_value(launcher()),
                             icons["workbench.svg"])
        temporary = entry.with_name(f".{entry.name}.tmp")
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, entry)
    except OSError as exc:
        print(f"workbench shortcut: cannot write '{exc.filename}': {exc.strerror}",
              file=sys.stderr)
        return 1
    _refresh_menu_caches(entry.parent)
    print(f"added the menu entry {entry}")
    return 0


def _refresh_menu_caches(applications: Path) -> None:
    """Tell the menus at once where the tools exist; they notice the file later anyway."""
    tool = shutil.which("update-desktop-database")
    if tool:
        subprocess.run([tool, str(applications)], capture_output=True, check=False)


# ---------------------------------------------------------------- Windows
def start_menu_folder() -> Path:
    return Path(os.environ.get("APPDATA", Path.home() / "AppData" / "Roaming")) / \
        "Microsoft" / "Windows" / "Start Menu" / "Programs"


def _windows_shortcut(remove: bool) -> int:
    from PIL import Image

    from workbench.gui.resources import resource_path

    link = start_menu_folder() / "Workbench.lnk"
    icon = Path(os.environ.get("LOCALAPPDATA", Path.home())) / "workbench" / "workbench.ico"
    if remove:
        for path in (link, icon):
            if path.is_file():
                path.unlink()
        print(f"removed {link}")
        return 0
    scripts = Path(sysconfig.get_path("scripts"))
    target = scripts / "workbench-gui.exe"
    arguments = ""
    if not target.is_file():
        target, arguments = Path(sys.executable).with_name("pythonw.exe"), "-m workbench"
    icon.parent.mkdir(parents=True, exist_ok=True)
    Image.open(resource_path("workbench.png")).save(icon, sizes=[(256, 256), (48, 48),
                                                                 (32, 32), (16, 16)])
    script = ("$s = (New-Object -ComObject WScript.Shell).CreateShortcut($env:WB_LINK); "
              "$s.TargetPath = $env:WB_TARGET; $s.Arguments = $env:WB_ARGUMENTS; "
              "$s.IconLocation = $env:WB_ICON; $s.Description = 'Workbench'; $s.Save()")
    environment = dict(os.environ, WB_LINK=str(link), WB_TARGET=str(target),
                       WB_ARGUMENTS=arguments, WB_ICON=str(icon))
    link.parent.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(["powershell", "-NoProfile", "-NonInteractive", "-Command", script],
                              env=environment, capture_output=True, text=True, check=False)
    except OSError as exc:
        print(f"workbench shortcut: PowerShell could not be started ({exc}); pin "
              f"{target} to the Start menu by hand", file=sys.stderr)
        return 1
    if done.returncode != 0 or not link.is_file():
        print(f"workbench shortcut: the Start-menu shortcut was not made: "
              f"{done.stderr.strip() or done.stdout.strip()}", file=sys.stderr)
        return 1
    print(f"added the Start-menu shortcut {link}")
    return 0
