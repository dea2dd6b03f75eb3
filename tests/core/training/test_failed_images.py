"""Images that fail to decode, in a real run: one log line per file, Pillow's warnings in the
log, the terminal told where the log is, and a log that cannot be written stops the run."""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import pytest

from tests.core.conftest import write_truncated_png
from workbench.cli.terminal_progress import TerminalProgress
from workbench.core.data.decode_failures import read_failure_log, read_warning_log
from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import Callback, RunStart
from workbench.core.runs.run_folder import DECODE_FAILURES
from workbench.core.training.engine import train


def _config(data: Path, output: Path, **changes) -> TrainConfig:
    return TrainConfig(
        data_root=str(data), model="small_cnn", weights="none", crop_mode="standard",
        resize_size=32, crop_size=28, batch_size=8, epochs=2, workers=0, lr=0.01,
        output_dir=str(output), cache_images=False, seed=1,
        # Through the loader, which decodes every image again each epoch.
        images_on_device=False,
    ).replace(**changes)


@pytest.fixture
def data_with_a_broken_and_a_warning_image(tmp_path: Path, png_with_a_broken_exif_block) -> Path:
    root = write_shape_dataset(tmp_path / "data", per_class=6, size=(40, 32),
                               layout="train_val", val_per_class=2)
    # Truncated: its header reads, so the scan keeps it and training finds it.
    write_truncated_png(root / "train" / "circle" / "broken.png")
    png_with_a_broken_exif_block(root / "train" / "square" / "odd_exif.png")
    return root


def test_each_file_has_one_line_and_warnings_go_into_the_log(
    data_with_a_broken_and_a_warning_image: Path, tmp_path: Path
) -> None:
    terminal = io.StringIO()
    with warnings.catch_warnings(record=True) as escaped:
        warnings.simplefilter("always")
        end = train(_config(data_with_a_broken_and_a_warning_image, tmp_path / "runs"),
                    TerminalProgress(stream=terminal))

    assert end.status == "completed" and end.epochs_completed == 2
    log = Path(end.run_dir) / DECODE_FAILURES
    lines = log.read_text().splitlines()
    # Two epochs tried both files twice: still one line each.
    assert len(lines) == 2, lines
    failures = read_failure_log(str(log))
    assert [Path(path).name for path, _ in failures] == ["broken.png"]
    logged_warnings = read_warning_log(str(log))
    assert [Path(path).name for path, _ in logged_warnings] == ["odd_exif.png"]
    assert "Tag data larger than file" in logged_warnings[0][1]
    assert not [w for w in escaped if "Tag data" in str(w.message)]  # not on the terminal
    output = terminal.getvalue()
    assert f"1 image(s) could not be decoded and 1 decoded with warnings; one line each in {log}" \
        in output
    assert "Tag data" not in output


def test_a_failure_log_that_cannot_be_written_stops_the_run_with_the_reason(
    data_with_a_broken_and_a_warning_image: Path, tmp_path: Path
) -> None:
    class BlockTheLog(Callback):
        """Puts a folder where the run's failure log goes, before the first step."""

        def on_run_start(self, event: RunStart) -> None:
            (Path(event.run_dir) / DECODE_FAILURES).mkdir()

    end = train(_config(data_with_a_broken_and_a_warning_image, tmp_path / "runs"),
                BlockTheLog())

    assert end.status == "failed"
    assert DECODE_FAILURES in end.error and "broken.png" in end.error
    assert "could no longer be counted" in end.error


def test_a_loader_process_that_cannot_write_the_log_stops_the_run_with_the_reason(
    data_with_a_broken_and_a_warning_image: Path, tmp_path: Path
) -> None:
    class BlockTheLog(Callback):
        def on_run_start(self, event: RunStart) -> None:
            (Path(event.run_dir) / DECODE_FAILURES).mkdir()

    end = train(_config(data_with_a_broken_and_a_warning_image, tmp_path / "runs", workers=1,
                        epochs=1), BlockTheLog())

    assert end.status == "failed"
    assert end.error.startswith(f"{Path(end.run_dir) / DECODE_FAILURES}: cannot record")
    assert "Traceback" not in end.error and "broken.png" in end.error


def test_a_run_that_fails_before_its_first_epoch_claims_no_best_epoch(tmp_path: Path) -> None:
    data = write_shape_dataset(tmp_path / "data", per_class=4, size=(40, 32),
                               layout="train_val", val_per_class=1)
    write_truncated_png(data / "train" / "circle" / "broken.png")
    terminal = io.StringIO()
    # No failed image allowed: the first epoch's first bad batch ends the run.
    end = train(_config(data, tmp_path / "runs", max_failed_images=0, epochs=1),
                TerminalProgress(terminal))

    output = terminal.getvalue()
    assert end.status == "failed" and "max_failed_images" in end.error
    assert end.epochs_completed == 0 and end.best_epoch == 0
    assert end.best_val_accuracy == 0.0 and end.last_checkpoint_path == ""
    assert "best val accuracy" not in output and "-1.000" not in output
    assert "run failed after 0 epoch(s)" in output
    # The folder is there, and the terminal says why and what it holds.
    run_dir = Path(end.run_dir)
    assert sorted(p.name for p in run_dir.iterdir()) == ["config.json", DECODE_FAILURES,
                                                         "metrics.jsonl"]
    assert f"No epoch finished, so nothing was saved; the run folder {run_dir} is kept" in output
