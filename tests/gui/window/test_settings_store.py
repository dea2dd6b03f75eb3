"""SettingsStore: config, recent folders and window layout survive a restart; files fail clearly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QMainWindow

from workbench.core.runs.config import ConfigError, TrainConfig
from workbench.gui.window.settings_store import (
    CONFIG_KEY,
    MAX_RECENT,
    SettingsStore,
    load_config_file,
    save_config_file,
)


def test_settings_are_written_under_the_test_folder(isolated_settings: Path):
    store = SettingsStore()
    store.save_config(TrainConfig(epochs=3))
    store.settings.sync()
    assert Path(store.settings.fileName()).is_relative_to(isolated_settings)
    assert Path(store.settings.fileName()).is_file()


def test_config_survives_a_new_store(tmp_path):
    config = TrainConfig(data_root=str(tmp_path), lr=3.25e-5, epochs=11, crop_mode="ten_crop",
                         amp=False, run_name="kept")
    SettingsStore().save(config, [str(tmp_path)])

    reloaded = SettingsStore()  # what the next session sees
    assert reloaded.load_config() == config
    assert json.loads(reloaded.settings.value(CONFIG_KEY)) == config.to_dict()


def test_nothing_stored_gives_defaults():
    assert SettingsStore().load() == (TrainConfig(), [])


@pytest.mark.parametrize("stored", ["{not json", "[1, 2]", json.dumps({"epochs": "ten"})])
def test_unreadable_stored_config_gives_defaults(stored):
    QSettings().setValue(CONFIG_KEY, stored)
    assert SettingsStore().load_config() == TrainConfig()


def test_unknown_stored_fields_are_dropped_and_the_rest_kept():
    data = TrainConfig(epochs=4, lr=0.02).to_dict() | {"field_from_the_future": 1}
    QSettings().setValue(CONFIG_KEY, json.dumps(data))
    assert SettingsStore().load_config() == TrainConfig(epochs=4, lr=0.02)


def test_recent_folders_newest_first_unique_and_capped():
    store = SettingsStore()
    store.add_recent_folder("/data/one")
    assert SettingsStore().recent_folders() == ["/data/one"]  # a one-item list survives
    for index in range(MAX_RECENT + 3):
        store.add_recent_folder(f"/data/{index}")
    store.add_recent_folder("/data/2")
    folders = SettingsStore().recent_folders()
    assert folders[0] == "/data/2"
    assert len(folders) == MAX_RECENT == len(set(folders))
    assert "/data/one" not in folders


def test_window_geometry_is_restored(qtbot):
    window = QMainWindow()
    qtbot.addWidget(window)
    window.resize(640, 410)
    window.show()
    SettingsStore().save(TrainConfig(), [], window)

    restored = QMainWindow()
    qtbot.addWidget(restored)
    assert SettingsStore().restore_window(restored)
    assert (restored.width(), restored.height()) == (640, 410)


def test_config_files_round_trip(tmp_path):
    config = TrainConfig(data_root=str(tmp_path), batch_size=5, optimizer="adamw")
    path = tmp_path / "saved.json"
    save_config_file(config, path)
    assert load_config_file(path) == config


def test_config_file_errors_name_the_file(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text('{"epochs": 3,')
    with pytest.raises(ConfigError, match="broken.json: not valid JSON"):
        load_config_file(broken)
    with pytest.raises(ConfigError, match="missing.json: cannot read config"):
        load_config_file(tmp_path / "missing.json")
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    with pytest.raises(ConfigError, match="cannot save config"):
        save_config_file(TrainConfig(), blocker / "config.json")


def test_a_pending_resume_is_not_carried_into_the_next_launch(tmp_path):
    store = SettingsStore()
    store.save_config(TrainConfig(data_root=str(tmp_path), resume=str(tmp_path / "last.pt")))
    restored = SettingsStore().load_config()
    assert restored.resume == "" and restored.data_root == str(tmp_path)
