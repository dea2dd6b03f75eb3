"""What the window remembers between sessions, and config files the user loads and saves.

The config is stored as the engine's own JSON (``TrainConfig.to_json``), so a stored config and
a run folder's ``config.json`` are the same thing. QSettings keys live under the application's
organisation and name, which ``app.main`` sets (tests point QSettings at a temporary folder).
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings
from PySide6.QtWidgets import QMainWindow

from workbench.core.runs.config import ConfigError, TrainConfig

CONFIG_KEY = "config/json"
RECENT_KEY = "dataset/recent_folders"
GEOMETRY_KEY = "window/geometry"
STATE_KEY = "window/state"
MAX_RECENT = 10


class SettingsStore:
    """Load and save the config, recent folders and window layout through QSettings."""

    def __init__(self, settings: QSettings | None = None) -> None:
        self._settings = settings if settings is not None else QSettings()

    @property
    def settings(self) -> QSettings:
        """The QSettings object used (its ``fileName()`` says where it writes)."""
        return self._settings

    # ------------------------------------------------------------------ config
    def load_config(self) -> TrainConfig:
        """The stored config; defaults when none is stored or it cannot be read.

        Fields a newer or older version does not know are dropped rather than losing the rest.
        """
        text = self._settings.value(CONFIG_KEY, "")
        if not isinstance(text, str) or not text:
            return TrainConfig()
        try:
            data = json.loads(text)
        except ValueError:
            return TrainConfig()
        if not isinstance(data, dict):
            return TrainConfig()
        known = {field.name for field in dataclasses.fields(TrainConfig)}
        try:
            return TrainConfig.from_dict({k: v for k, v in data.items() if k in known})
        except ConfigError:
            return TrainConfig()

    def save_config(self, config: TrainConfig) -> None:
        """Remember ``config`` for the next session (not ``resume``: continuing a run is chosen
        for that run, never carried silently into a later launch)."""
        self._settings.setValue(CONFIG_KEY, config.replace(resume="").to_json())

    # ------------------------------------------------------------------ recent folders
    def recent_folders(self) -> list[str]:
        """Recently opened dataset folders, newest first."""
        value = self._settings.value(RECENT_KEY, [])
        if isinstance(value, str):  # QSettings returns a lone string for a one-item list
            value = [value] if value else []
        return [str(folder) for folder in (value or []) if folder][:MAX_RECENT]

    def set_recent_folders(self, folders: list[str]) -> None:
        """Store ``folders`` (newest first, duplicates dropped, at most MAX_RECENT)."""
        unique = list(dict.fromkeys(str(folder) for folder in folders if folder))
        self._settings.setValue(RECENT_KEY, unique[:MAX_RECENT])

    def add_recent_folder(self, folder: str) -> list[str]:
        """Put ``folder`` first in the recent list and return the new list."""
        folders = [folder, *(f for f in self.recent_folders() if f != folder)]
        self.set_recent_folders(folders)
        return self.recent_folders()

    # ------------------------------------------------------------------ window
    def save_window(self, window: QMainWindow) -> None:
        """Remember the window's geometry and dock/toolbar state."""
        self._settings.setValue(GEOMETRY_KEY, window.saveGeometry())
        self._settings.setValue(STATE_KEY, window.saveState())

    def restore_window(self, window: QMainWindow) -> bool:
        """Restore geometry and state saved earlier; False when nothing was stored."""
        geometry = self._settings.value(GEOMETRY_KEY)
        state = self._settings.value(STATE_KEY)
        restored = False
        if isinstance(geometry, QByteArray) and not geometry.isEmpty():
            restored = window.restoreGeometry(geometry)
        if isinstance(state, QByteArray) and not state.isEmpty():
            window.restoreState(state)
        return restored

    # ------------------------------------------------------------------ everything at once
    def load(self) -> tuple[TrainConfig, list[str]]:
        """The stored config and recent folders."""
        return self.load_config(), self.recent_folders()

    def save(self, config: TrainConfig, recent_folders: list[str],
             window: QMainWindow | None = None) -> None:
        """Store config, recent folders and (when given) the window layout, and write to disk."""
        self.save_config(config)
        self.set_recent_folders(recent_folders)
        if window is not None:
            self.save_window(window)
        self._settings.sync()


def load_config_file(path: str | os.PathLike[str]) -> TrainConfig:
    """A config from a JSON file (a saved config or a run's config.json).

    Raises:
        ConfigError: the file cannot be read or is not a valid config; the message names it.
    """
    return TrainConfig.load(path)


def save_config_file(config: TrainConfig, path: str | os.PathLike[str]) -> None:
    """Write ``config`` as JSON, atomically.

    Raises:
        ConfigError: the file cannot be written; the message names it and the reason.
    """
    try:
        config.save(Path(path))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot save config ({exc.strerror or exc})") from exc
