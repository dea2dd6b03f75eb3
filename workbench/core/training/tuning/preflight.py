"""Before Start: what the run would refuse at once, found without training anything.

``preflight(config)`` makes the checks the run makes before its first step, with the same
code where there is code to share: ``TrainConfig.validate()``, the training scan
(``scan_for_training``: folder, classes, images, train/ and val/), the device choice, the run
folder (created under ``output_dir``; a resumed run writes beside its checkpoint), the resumed
checkpoint and its classes, and whether the ImageNet weights can be downloaded. Problems block
Start; notes are things a user should know first (a batch larger than the training set, a
download at Start). Nothing is written: the write test makes a folder and removes it again.
"""

from __future__ import annotations

import functools
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from workbench.core.data.dataset_scan import DatasetError, DatasetScan
from workbench.core.devices.idle_card import idle_card
from workbench.core.devices.selection import DeviceError, resolve_device
from workbench.core.models.building import imagenet_weights_path, imagenet_weights_size
from workbench.core.models.checkpoint_format import CheckpointError, load_checkpoint
from workbench.core.runs.atomic_io import describe_os_error
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.config_fields import problem_text
from workbench.core.runs.model_catalog import TORCHVISION_MODELS
from workbench.core.runs.training_set_size import effective_batch_size
from workbench.core.training.session_setup import scan_for_training

WRITE_TEST_PREFIX = ".workbench-write-test-"


@dataclass(frozen=True)
class Finding:
    """One problem or note: the config field it is about and a sentence naming the folder or
    file, the reason and what to do."""

    field: str
    text: str


@dataclass(frozen=True)
class PreflightResult:
    """What ``preflight`` found for ``config``; Start can start it when ``problems`` is empty."""

    config: TrainConfig
    problems: tuple[Finding, ...] = ()
    notes: tuple[Finding, ...] = ()
    weights_download_bytes: int = 0
    """Size of the ImageNet weights Start would download first; 0 when nothing is downloaded."""

    @property
    def can_start(self) -> bool:
        return not self.problems


def preflight(config: TrainConfig) -> PreflightResult:
    """Check ``config`` as the run does before its first step; reads files, writes none.

    Takes as long as a scan of the data folder (a few seconds for 100,000 files), so a window
    runs it off its UI thread.
    """
    problems = [Finding(name, text) for name, text in config.field_problems()]
    broken = {finding.field for finding in problems}
    notes: list[Finding] = []
    scan = None
    if not broken & {"data_root", "val_fraction"}:
        scan, scan_problem = _scan(config)
        problems.extend(scan_problem)
        if scan is not None:
            notes.extend(_batch_notes(config, len(scan.train)))
            # Where copies had to be split so that a class validates: said before Start.
            notes.extend(Finding("data_root", note) for note in scan.split_notes)
    if "device" not in broken:
        problems.extend(_device_problems(config))
        notes.extend(_idle_card_notes(config))
    if "output_dir" not in broken and "resume" not in broken:
        problems.extend(_run_folder_problems(config))
    if config.resume and "resume" not in broken:
        problems.extend(_resume_problems(config, scan))
    download_bytes = 0
    if config.model in TORCHVISION_MODELS and config.weights == "imagenet":
        download_bytes, weights_finding, blocking = _imagenet_weights_finding(config.model)
        if weights_finding is not None:
            (problems if blocking else notes).append(weights_finding)
    return PreflightResult(config, tuple(problems), tuple(notes), download_bytes)


def megabytes(nbytes: int) -> str:
    """'46.8 MB': decimal megabytes, as the download's progress line counts them."""
    return f"{nbytes / 1e6:.1f} MB"


def _scan(config: TrainConfig) -> tuple[DatasetScan | None, list[Finding]]:
    """The run's own scan and refusals; the batch is left to ``_batch_notes``."""
    try:
        # Batch 1 passes the scan's batch check whenever there is a training image: an
        # oversize batch is clamped, not refused, and gets a note instead.
        return scan_for_training(config.replace(batch_size=1)), []
    except DatasetError as exc:
        return None, [Finding("data_root", problem_text(
            "data_root", reason_first(str(exc), config.data_root)))]
    except OSError as exc:
        return None, [Finding("data_root", problem_text(
            "data_root", f"'{exc.filename or config.data_root}': {describe_os_error(exc)}"))]


def reason_first(message: str, root: str) -> str:
    """'<folder>: <reason>' as '<reason> (in <folder>)': the line beside Start has room for
    the start of a message, and a long path would fill it."""
    end = message.find(": ", len(root)) if message.startswith(root) else -1
    if end < 0:
        return message
    return f"{message[end + 2:]} (in {message[:end]})"


def _batch_notes(config: TrainConfig, train_images: int) -> list[Finding]:
    """The run's own sentence when it will lower the batch to the training set."""
    batch = effective_batch_size(config, train_images)
    return [Finding("batch_size", batch.sentence)] if batch.clamped else []


def _device_problems(config: TrainConfig) -> list[Finding]:
    try:
        resolve_device(config.device)
    except DeviceError as exc:
        message = str(exc).removeprefix("device: ")
        head, newline, command = message.partition("\n")
        if newline:  # the command that installs a working torch stays last, to be copied
            message = f"{head.removesuffix(':')} (or choose 'auto' or 'cpu'):\n{command}"
        else:
            message += "; choose 'auto' or 'cpu'"
        return [Finding("device", problem_text("device", message))]
    return []


def _idle_card_notes(config: TrainConfig) -> list[Finding]:
    """An NVIDIA card this torch cannot use, when the run falls back to the CPU for it."""
    if config.device != "auto":
        return []
    idle = idle_card()
    if idle is None or resolve_device("auto") != "cpu":
        return []
    return [Finding("device", f"Training will use the CPU: {idle.text}")]


def _run_folder_problems(config: TrainConfig) -> list[Finding]:
    """The run creates its folder under ``output_dir``; a resumed run writes beside its
    checkpoint instead."""
    if config.resume:
        folder, field = Path(config.resume).resolve().parent, "resume"
    else:
        folder, field = Path(os.path.abspath(config.output_dir)), "output_dir"
    reason = folder_write_problem(folder)
    if reason is None:
        return []
    advice = ("a resumed run writes beside its checkpoint; copy its run folder somewhere "
              "writable" if field == "resume" else "choose another folder for the runs")
    return [Finding(field, problem_text(field, f"{reason}; {advice}"))]


def folder_write_problem(folder: Path) -> str | None:
    """Why a new folder cannot be made in ``folder`` (created first if missing), or None.

    The test makes a folder in the nearest part of the path that exists, as creating the
    missing parts would, and removes it again at once.
    """
    existing = folder
    try:
        while not existing.exists() and existing.parent != existing:
            existing = existing.parent
        if not existing.is_dir():
            if existing == folder:
                return f"'{folder}' is a file, not a folder"
            return f"'{existing}' is a file, not a folder, so '{folder}' cannot be created"
        probe = tempfile.mkdtemp(prefix=WRITE_TEST_PREFIX, dir=existing)
    except OSError as exc:
        return f"'{existing}' cannot be written ({describe_os_error(exc)})"
    os.rmdir(probe)
    return None


def _resume_problems(config: TrainConfig, scan: DatasetScan | None) -> list[Finding]:
    path = Path(config.resume)
    try:
        info = path.stat()
        classes = _checkpoint_classes(str(path), info.st_size, info.st_mtime_ns)
    except (CheckpointError, OSError) as exc:
        return [Finding("resume", problem_text("resume", str(exc)))]
    if scan is not None and list(classes) != list(scan.class_names):
        return [Finding("resume", problem_text(
            "resume", f"'{path}' was trained on classes {list(classes)}, but "
                      f"{config.data_root} has {scan.class_names}; choose that run's data "
                      "folder, or clear Resume to start a new run"))]
    return []


@functools.lru_cache(maxsize=4)
def _checkpoint_classes(path: str, _size: int, _mtime_ns: int) -> tuple[str, ...]:
    """A checkpoint's class names, read as the run reads it (once a version of the file)."""
    return tuple(load_checkpoint(path)["class_names"])


def _imagenet_weights_finding(model: str) -> tuple[int, Finding | None, bool]:
    """(bytes to download, the note or problem, whether it blocks Start)."""
    path = imagenet_weights_path(model)
    if path.is_file():
        return 0, None, False
    size = imagenet_weights_size(model)
    what = f"ImageNet weights for {model} ({megabytes(size)})"
    reason = folder_write_problem(path.parent)
    if reason is not None:
        return 0, Finding("weights", problem_text(
            "weights", f"{what} are not on this computer and cannot be downloaded: {reason}. "
                       f"Copy '{path.name}' into '{path.parent}', or choose weights 'none'")), True
    return size, Finding("weights", problem_text(
        "weights", f"{what} will be downloaded at Start into '{path.parent}'")), False
