"""Model measurements remembered per machine, so the picker and ``workbench models --measure``
show them at once instead of measuring again.

One JSON file, ``<cache folder>/measurements/model_measurements.json`` next to the resized
images (``$WORKBENCH_CACHE_DIR`` or the user's cache folder). A measurement is found again only
for the same host, device name, torch and torchvision versions and the same settings (model,
batch, crop, amp, fine-tune mode, device): a new driver of torch or another card is another
machine. Writes are atomic, so two windows measuring at once never leave half a file; a file
that cannot be read or is not a measurement file is ignored with a warning (and replaced by the
next write), never a crash.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path

from workbench.core.data.cache_folder import default_cache_dir
from workbench.core.runs.atomic_io import atomic_write_text, describe_os_error
from workbench.core.training.tuning.model_measurement import (
    MeasurementSettings,
    ModelMeasurement,
    machine_identity,
)
from workbench.core.warnings import WorkbenchWarning

FILE_FORMAT = 1
MEASUREMENTS_FOLDER = "measurements"
MEASUREMENTS_FILE = "model_measurements.json"


class MeasurementCacheWarning(WorkbenchWarning):
    """The measurements file could not be read or written; measuring goes on without it."""


def measurement_cache_path(cache_dir: str | os.PathLike[str] = "") -> Path:
    """The measurements file of the image cache folder ``cache_dir`` (the default one when
    empty)."""
    return Path(cache_dir or default_cache_dir()) / MEASUREMENTS_FOLDER / MEASUREMENTS_FILE


def measurement_key(settings: MeasurementSettings, identity: dict[str, str]) -> str:
    """The entry's key: machine identity and settings, as sorted JSON (readable in the file)."""
    return json.dumps({**identity, **asdict(settings)}, sort_keys=True)


class MeasurementCache:
    """Reads and writes the measurements file.

    Args:
        path: the file; :func:`measurement_cache_path` of the default cache folder when None.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else measurement_cache_path()
        self._identities: dict[str, dict[str, str]] = {}

    def get(self, settings: MeasurementSettings) -> ModelMeasurement | None:
        """The measurement of ``settings`` on this machine, None when there is none."""
        return self.get_many([settings])[0]

    def get_many(self, settings: Iterable[MeasurementSettings]
                 ) -> list[ModelMeasurement | None]:
        """``get`` of each of ``settings``, from one read of the file."""
        entries = self._read_entries()
        return [self._measurement(entries, one) for one in settings]

    def _measurement(self, entries: dict[str, dict], settings: MeasurementSettings
                     ) -> ModelMeasurement | None:
        data = entries.get(measurement_key(settings, self._identity(settings)))
        if data is None:
            return None
        try:
            return ModelMeasurement.from_json(data)
        except (KeyError, TypeError, ValueError) as exc:
            self._warn(f"an entry for {settings.model} is not a measurement ({exc}); it is "
                       "measured again")
            return None

    def put(self, measurement: ModelMeasurement) -> None:
        """Remember ``measurement`` (replacing an older one of the same settings). A file that
        cannot be written is warned about; the measurement is still returned to its caller."""
        entries = self._read_entries(quiet=True)
        identity = {"host": measurement.host, "device_name": measurement.device_name,
                    "torch_version": measurement.torch_version,
                    "torchvision_version": measurement.torchvision_version}
        entries[measurement_key(measurement.settings, identity)] = measurement.to_json()
        text = json.dumps({"format": FILE_FORMAT, "measurements": entries}, indent=1,
                          sort_keys=True)
        try:
            atomic_write_text(self.path, text + "\n")
        except OSError as exc:
            self._warn(f"cannot be written: {describe_os_error(exc)}")

    def _identity(self, settings: MeasurementSettings) -> dict[str, str]:
        if settings.device not in self._identities:
            self._identities[settings.device] = machine_identity(settings.device)
        return self._identities[settings.device]

    def _read_entries(self, quiet: bool = False) -> dict[str, dict]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError) as exc:
            if not quiet:
                reason = describe_os_error(exc) if isinstance(exc, OSError) else str(exc)
                self._warn(f"cannot be read ({reason}); measurements are not remembered")
            return {}
        try:
            data = json.loads(text)
            entries = data["measurements"]
            if data.get("format") != FILE_FORMAT:
                raise ValueError(f"format {data.get('format')!r}, not {FILE_FORMAT}")
            if not isinstance(entries, dict):
                raise ValueError(f"its measurements are a {type(entries).__name__}, not a "
                                 "mapping")
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            if not quiet:
                self._warn(f"is not a measurements file ({exc}); it is ignored and replaced "
                           "by the next measurement")
            return {}
        return entries

    def _warn(self, text: str) -> None:
        warnings.warn(f"Model measurements file {self.path} {text}.", MeasurementCacheWarning,
                      stacklevel=3)
