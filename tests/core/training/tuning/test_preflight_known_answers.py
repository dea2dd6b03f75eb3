"""Known answers of the pre-flight check: for a known folder and config, each sentence a user
reads beside Start, and which checks are left out when a field is already wrong (one problem a
field, never the same trouble twice)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.core.training.tuning.preflight_configs import small_config
from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.training.engine import train
from workbench.core.training.tuning.preflight import (
    Finding,
    folder_write_problem,
    megabytes,
    preflight,
    reason_first,
)

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/sys is Linux's")


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """Two classes, 10 images each: 16 training images in the automatic split."""
    return write_shape_dataset(tmp_path_factory.mktemp("known") / "data",
                               classes=("circle", "square"), per_class=10, size=(16, 16))


@pytest.fixture(scope="module")
def checkpoint(folder, tmp_path_factory) -> Path:
    end = train(small_config(folder, tmp_path_factory.mktemp("run")))
    assert end.status == "completed", end.error
    return Path(end.run_dir) / "last.pt"


def test_a_wrong_validation_fraction_is_the_one_problem_and_the_folder_is_not_scanned(
        folder, tmp_path):
    result = preflight(small_config(folder, tmp_path, val_fraction=1.5, batch_size=64))
    assert result.problems == (Finding(
        "val_fraction", "Validation fraction (val_fraction): must be between 0 and 1 (got 1.5)"),)
    assert result.notes == ()  # no batch note: the split it would count is not known


def test_auto_on_a_machine_without_an_nvidia_card_has_nothing_to_say(folder, tmp_path):
    config = small_config(folder, tmp_path, device="auto", batch_size=64)
    result = preflight(config)
    assert result.config == config and result.problems == ()
    assert result.notes == (Finding(
        "batch_size", "Batch size (batch_size) 64 is more than the 16 training images, so the "
                      "run trains with a batch of 16: one step an epoch, every image in it."),)


def test_a_device_name_that_is_not_one_is_said_once(folder, tmp_path):
    result = preflight(small_config(folder, tmp_path, device="tpu"))
    assert result.problems == (Finding(
        "device", "Device (device): 'tpu' is not 'auto', 'cpu', 'cuda' or 'cuda:N'"),)


def test_a_cuda_reason_ending_in_a_command_keeps_the_command_last(folder, tmp_path,
                                                                  monkeypatch):
    from workbench.core.devices import selection

    monkeypatch.setattr(selection, "cuda_unavailable_reason", lambda: (
        "this PyTorch is built without CUDA; install one that has it:\n"
        "    pip install torch --index-url https://download.pytorch.org/whl/cu124"))
    result = preflight(small_config(folder, tmp_path, device="cuda:1"))
    assert result.problems == (Finding("device", (
        "Device (device): cuda:1 was chosen but CUDA is unavailable: this PyTorch is built "
        "without CUDA; install one that has it (or choose 'auto' or 'cpu'):\n"
        "    pip install torch --index-url https://download.pytorch.org/whl/cu124")),)


def test_a_checkpoint_is_not_compared_with_a_folder_that_could_not_be_scanned(
        checkpoint, tmp_path):
    result = preflight(small_config(tmp_path / "gone", tmp_path, resume=str(checkpoint),
                                    epochs=2))
    assert result.problems == (Finding(
        "data_root", f"Data folder (data_root): folder '{tmp_path / 'gone'}' does not exist"),)


def test_a_resume_of_the_same_classes_has_nothing_to_say(checkpoint, folder, tmp_path):
    result = preflight(small_config(folder, tmp_path, resume=str(checkpoint), epochs=2))
    assert (result.problems, result.notes) == ((), ())


@linux_only
def test_a_checkpoint_in_a_folder_that_cannot_be_written_is_refused_with_the_resume_advice(
        folder, tmp_path):
    # /sys/kernel/notes exists (resume's own check passes) in a folder nobody may write in.
    result = preflight(small_config(folder, tmp_path, resume="/sys/kernel/notes"))
    assert [finding.field for finding in result.problems] == ["resume", "resume"]
    first = result.problems[0].text
    assert first.startswith("Resume from checkpoint (resume): '/sys/kernel' cannot be written (")
    assert first.endswith("); a resumed run writes beside its checkpoint; copy its run folder "
                          "somewhere writable")
    assert result.problems[1].text == (
        "Resume from checkpoint (resume): '/sys/kernel/notes' cannot be loaded: it is corrupt "
        "or not a PyTorch file (neither a zip archive nor a pickle)")


@linux_only
def test_a_resume_that_does_not_exist_is_not_checked_for_its_folder(folder, tmp_path):
    result = preflight(small_config(folder, tmp_path, resume="/sys/nothere.pt"))
    assert result.problems == (Finding(
        "resume", "Resume from checkpoint (resume): checkpoint '/sys/nothere.pt' does not exist"),)


@linux_only
def test_an_output_folder_left_empty_is_not_write_tested(folder, tmp_path, monkeypatch):
    # '' would be the current folder: here one nobody may write in.
    monkeypatch.chdir("/sys")
    result = preflight(small_config(folder, tmp_path, output_dir=""))
    assert result.problems == (Finding(
        "output_dir", "Output folder (output_dir): choose where runs are saved"),)


def test_weights_that_cannot_be_downloaded_count_no_download(folder, tmp_path, monkeypatch):
    (tmp_path / "a_file").write_text("")
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "a_file" / "torch"))
    result = preflight(small_config(folder, tmp_path, model="resnet18", weights="imagenet",
                                    finetune="last_layer"))
    assert result.weights_download_bytes == 0
    assert result.notes == () and not result.can_start


def test_imagenet_weights_are_looked_for_only_when_chosen(folder, tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    result = preflight(small_config(folder, tmp_path, model="resnet18", weights="none",
                                    finetune="last_layer"))
    assert (result.problems, result.notes, result.weights_download_bytes) == ((), (), 0)


def test_reason_first_moves_only_the_folders_own_prefix():
    assert reason_first("/data: no class subfolders", "/data") == "no class subfolders (in /data)"
    assert reason_first("/data/square: no images", "/data") == "no images (in /data/square)"
    # 'a: b' inside the folder name is not the separator.
    assert reason_first("/d: x: no images", "/d: x") == "no images (in /d: x)"
    assert reason_first("elsewhere: broken", "/data") == "elsewhere: broken"
    assert reason_first("/data has no separator", "/data") == "/data has no separator"
    # The first separator after the folder, not the last.
    assert reason_first("/data: damaged: x.png", "/data") == "damaged: x.png (in /data)"


def test_megabytes_are_decimal_with_one_decimal():
    assert megabytes(46_830_571) == "46.8 MB"
    assert megabytes(0) == "0.0 MB"
    assert megabytes(1_950_001) == "2.0 MB"  # 1.950001 MB rounds up


def test_the_write_test_makes_the_missing_parts_as_a_run_would(tmp_path):
    assert folder_write_problem(tmp_path / "a" / "b" / "c") is None
    assert not (tmp_path / "a").exists()
    (tmp_path / "f").write_text("")
    assert folder_write_problem(tmp_path / "f" / "x" / "y") == (
        f"'{tmp_path / 'f'}' is a file, not a folder, so '{tmp_path / 'f' / 'x' / 'y'}' cannot "
        "be created")


def test_weights_to_download_are_a_note_about_the_weights(folder, tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    result = preflight(small_config(folder, tmp_path, model="resnet18", weights="imagenet",
                                    finetune="last_layer"))
    assert [finding.field for finding in result.notes] == ["weights"]
    assert result.notes[0].text.startswith("Starting weights (weights): ImageNet weights for "
                                           "resnet18 (46.8 MB) will be downloaded at Start")
