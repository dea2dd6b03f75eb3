"""The pre-flight check on real folders: each thing the run refuses at once blocks Start with
the run's own reason, an oversize batch and a download at Start are notes, and nothing is
written anywhere."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torchvision

from tests.core.training.tuning.preflight_configs import small_config
from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.training.engine import train
from workbench.core.training.tuning.preflight import preflight


@pytest.fixture(scope="module")
def good_folder(tmp_path_factory) -> Path:
    """Two classes, 10 images each: 8 train / 2 val per class in the automatic split."""
    return write_shape_dataset(tmp_path_factory.mktemp("good") / "data",
                               classes=("circle", "square"), per_class=10, size=(16, 16))


def texts(findings) -> list[str]:
    return [finding.text for finding in findings]


def only_problem(result, field: str) -> str:
    assert not result.can_start
    assert [finding.field for finding in result.problems] == [field], texts(result.problems)
    return result.problems[0].text


def test_a_good_folder_can_start_with_nothing_to_say(good_folder, tmp_path):
    result = preflight(small_config(good_folder, tmp_path))
    assert result.can_start and result.problems == () and result.notes == ()
    assert result.weights_download_bytes == 0
    assert not (tmp_path / "runs").exists()  # checked, not created


def test_a_missing_folder_is_the_configs_own_problem(tmp_path):
    result = preflight(small_config(tmp_path / "nowhere", tmp_path))
    text = only_problem(result, "data_root")
    assert text == f"Data folder (data_root): folder '{tmp_path / 'nowhere'}' does not exist"


def test_an_empty_folder_blocks_start_naming_the_folder(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    text = only_problem(preflight(small_config(empty, tmp_path)), "data_root")
    assert text == ("Data folder (data_root): no class subfolders; put each class's images in a "
                    f"folder of its own ({empty}/<class>/image.jpg) (in {empty})")


def test_class_folders_without_images_block_start_naming_the_class(tmp_path):
    root = write_shape_dataset(tmp_path / "data", classes=("circle", "square"), per_class=5,
                               size=(16, 16))
    for image in (root / "square").iterdir():
        image.rename(image.with_suffix(".txt"))
    text = only_problem(preflight(small_config(root, tmp_path)), "data_root")
    assert text == ("Data folder (data_root): class folder has no images (5 files skipped, "
                    f"e.g. not an image file (extension .txt)) (in {root / 'square'})")


def test_one_class_blocks_start(tmp_path):
    root = write_shape_dataset(tmp_path / "data", classes=("circle",), per_class=6, size=(16, 16))
    text = only_problem(preflight(small_config(root, tmp_path)), "data_root")
    assert text == ("Data folder (data_root): needs at least 2 class folders, found 1 "
                    "('circle'); a classifier tells classes apart, so add a folder of images "
                    f"for each other class (in {root})")


def test_train_without_val_blocks_start(tmp_path):
    root = write_shape_dataset(tmp_path / "data", classes=("circle", "square"), per_class=4,
                               size=(16, 16), layout="train_val", val_per_class=2)
    for image in (root / "val").rglob("*.png"):
        image.unlink()
    for folder in sorted((root / "val").iterdir()):
        folder.rmdir()
    (root / "val").rmdir()
    text = only_problem(preflight(small_config(root, tmp_path)), "data_root")
    assert "has a 'train' folder but no 'val' folder" in text


@pytest.mark.parametrize("case", ["empty", "one_class", "output_under_a_file"])
def test_what_blocks_start_is_what_the_run_refuses(case, good_folder, tmp_path):
    """The same reason, word for word, as the run's own failure: Start is never enabled for
    something the run refuses at once."""
    config = small_config(good_folder, tmp_path)
    if case == "empty":
        (tmp_path / "empty").mkdir()
        config = config.replace(data_root=str(tmp_path / "empty"))
    elif case == "one_class":
        root = write_shape_dataset(tmp_path / "one", classes=("circle",), per_class=6,
                                   size=(16, 16))
        config = config.replace(data_root=str(root))
    else:
        (tmp_path / "a_file").write_text("not a folder")
        config = config.replace(output_dir=str(tmp_path / "a_file" / "runs"))
    result = preflight(config)
    end = train(config)
    assert end.status == "failed" and not result.can_start
    if case == "output_under_a_file":  # the run names the path mkdir failed on
        assert end.error.startswith(f"'{tmp_path / 'a_file' / 'runs'}'")
        assert f"'{tmp_path / 'a_file'}' is a file, not a folder" in result.problems[0].text
    else:  # the run's '<folder>: <reason>', reason first
        folder, reason = end.error.split(": ", 1)
        assert result.problems[0].text.endswith(f"{reason} (in {folder})")


def test_an_output_folder_under_a_file_blocks_start_and_nothing_is_written(good_folder,
                                                                          tmp_path):
    blocker = tmp_path / "results.txt"
    blocker.write_text("a file where a folder would go")
    before = sorted(os.listdir(tmp_path))
    result = preflight(small_config(good_folder, tmp_path, output_dir=str(blocker / "runs")))
    assert only_problem(result, "output_dir") == (
        f"Output folder (output_dir): '{blocker}' is a file, not a folder, so "
        f"'{blocker / 'runs'}' cannot be created; choose another folder for the runs")
    assert sorted(os.listdir(tmp_path)) == before

    result = preflight(small_config(good_folder, tmp_path, output_dir=str(blocker)))
    assert only_problem(result, "output_dir").startswith(
        f"Output folder (output_dir): '{blocker}' is a file, not a folder;")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/sys is Linux's")
def test_an_unwritable_output_folder_blocks_start_even_for_root(good_folder, tmp_path):
    # Nobody, root included, may make a folder in /sys: the write test itself must fail.
    result = preflight(small_config(good_folder, tmp_path, output_dir="/sys/workbench-runs"))
    text = only_problem(result, "output_dir")
    assert text.startswith("Output folder (output_dir): '/sys' cannot be written (")
    assert text.endswith("; choose another folder for the runs")


def test_the_write_test_leaves_nothing_in_a_writable_folder(good_folder, tmp_path):
    out = tmp_path / "existing_runs"
    out.mkdir()
    assert preflight(small_config(good_folder, tmp_path, output_dir=str(out))).can_start
    assert list(out.iterdir()) == []


def test_a_batch_larger_than_the_training_set_is_a_note_not_a_problem(good_folder, tmp_path):
    # 2 classes x 10 images, 2 of each held out: 16 training images.
    result = preflight(small_config(good_folder, tmp_path, batch_size=64))
    assert result.can_start
    assert texts(result.notes) == [  # the sentence the run's log gives
        "Batch size (batch_size) 64 is more than the 16 training images, so the run trains "
        "with a batch of 16: one step an epoch, every image in it."]
    assert preflight(small_config(good_folder, tmp_path, batch_size=16)).notes == ()


def test_a_missing_weights_file_blocks_start(good_folder, tmp_path):
    config = small_config(good_folder, tmp_path, weights="file",
                          weights_file=str(tmp_path / "gone.pt"))
    assert only_problem(preflight(config), "weights_file") == (
        f"Weights file (weights_file): file '{tmp_path / 'gone.pt'}' does not exist")


def test_a_device_that_is_not_here_blocks_start(good_folder, tmp_path, monkeypatch):
    from workbench.core.devices import selection

    monkeypatch.setattr(selection, "cuda_unavailable_reason", lambda: "no NVIDIA driver")
    text = only_problem(preflight(small_config(good_folder, tmp_path, device="cuda")), "device")
    assert text == ("Device (device): cuda:0 was chosen but CUDA is unavailable: no NVIDIA "
                    "driver; choose 'auto' or 'cpu'")


@pytest.fixture(scope="module")
def checkpoint(good_folder, tmp_path_factory) -> Path:
    """last.pt of a finished one-epoch run on ``good_folder`` (classes circle and square)."""
    out = tmp_path_factory.mktemp("resume-run")
    end = train(small_config(good_folder, out))
    assert end.status == "completed", end.error
    return Path(end.run_dir) / "last.pt"


def test_resume_from_a_checkpoint_of_other_classes_blocks_start(checkpoint, tmp_path):
    other = write_shape_dataset(tmp_path / "other", classes=("cross", "triangle"), per_class=6,
                                size=(16, 16))
    config = small_config(other, tmp_path, resume=str(checkpoint), epochs=2)
    text = only_problem(preflight(config), "resume")
    assert text == (f"Resume from checkpoint (resume): '{checkpoint}' was trained on classes "
                    f"['circle', 'square'], but {other} has ['cross', 'triangle']; choose that "
                    "run's data folder, or clear Resume to start a new run")


def test_resume_from_the_same_classes_can_start(checkpoint, good_folder, tmp_path):
    config = small_config(good_folder, tmp_path, resume=str(checkpoint), epochs=2)
    assert preflight(config).can_start


def test_resume_from_a_file_that_is_not_a_checkpoint_blocks_start(good_folder, tmp_path):
    junk = tmp_path / "last.pt"
    junk.write_bytes(b"not a checkpoint")
    text = only_problem(preflight(small_config(good_folder, tmp_path, resume=str(junk))),
                        "resume")
    assert text.startswith(f"Resume from checkpoint (resume): '{junk}'")


def imagenet_size_text() -> str:
    """The file's size from torchvision's metadata (MiB there), as decimal MB."""
    mib = torchvision.models.ResNet18_Weights.IMAGENET1K_V1.meta["_file_size"]
    return f"{mib * 2**20 / 1e6:.1f} MB"


def test_imagenet_weights_not_here_are_a_note_with_their_size(good_folder, tmp_path,
                                                             monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    config = small_config(good_folder, tmp_path, model="resnet18", weights="imagenet",
                          finetune="last_layer")
    result = preflight(config)
    hub = tmp_path / "torch" / "hub" / "checkpoints"
    assert result.can_start
    assert texts(result.notes) == [
        f"Starting weights (weights): ImageNet weights for resnet18 ({imagenet_size_text()}) "
        f"will be downloaded at Start into '{hub}'"]
    assert imagenet_size_text() == "46.8 MB"  # torchvision's 44.661 MiB
    assert abs(result.weights_download_bytes - 46_830_571) < 1024  # the file's real size
    assert not hub.exists()

    hub.mkdir(parents=True)
    (hub / "resnet18-f37072fd.pth").write_bytes(b"present")
    result = preflight(config)
    assert result.notes == () and result.weights_download_bytes == 0


def test_each_models_own_imagenet_file_is_the_one_looked_for(good_folder, tmp_path,
                                                             monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    hub = tmp_path / "torch" / "hub" / "checkpoints"
    hub.mkdir(parents=True)
    (hub / "resnet18-f37072fd.pth").write_bytes(b"present")  # another model's file
    config = small_config(good_folder, tmp_path, model="convnext_tiny", weights="imagenet",
                          finetune="last_layer", resize_size=40, crop_size=32)
    result = preflight(config)
    assert texts(result.notes) == [
        "Starting weights (weights): ImageNet weights for convnext_tiny (114.4 MB) "
        f"will be downloaded at Start into '{hub}'"]
    assert abs(result.weights_download_bytes - 114_419_565) < 1024  # torchvision's 109.119 MiB


def test_imagenet_weights_that_cannot_be_downloaded_here_block_start(good_folder, tmp_path,
                                                                     monkeypatch):
    (tmp_path / "a_file").write_text("")
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "a_file" / "torch"))
    config = small_config(good_folder, tmp_path, model="resnet18", weights="imagenet",
                          finetune="last_layer")
    text = only_problem(preflight(config), "weights")
    assert text.startswith("Starting weights (weights): ImageNet weights for resnet18 "
                           f"({imagenet_size_text()}) are not on this computer and cannot be "
                           f"downloaded: '{tmp_path / 'a_file'}' is a file, not a folder")
    assert text.endswith("or choose weights 'none'")
