"""Folders users collect themselves: odd layouts, system clutter, links, odd names, and files
that vanish or break while a run trains."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from workbench.core.data.data_pipeline import ImageSampleDataset
from workbench.core.data.dataset_scan import DatasetError, scan_dataset
from workbench.core.data.decode_failures import read_failure_log
from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.data.image_cache import load_image_uint8
from workbench.core.data.multicrop import IGNORE_LABEL
from workbench.core.data.transforms import build_eval_transform
from workbench.core.models.checkpoint_format import load_checkpoint
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import Callback
from workbench.core.runs.run_folder import DECODE_FAILURES
from workbench.core.training.engine import train

CLASSES = ("circle", "square")


def _dataset(root: Path, per_class: int = 4, layout: str = "flat", **options) -> Path:
    return write_shape_dataset(root, classes=CLASSES, per_class=per_class, size=(40, 32),
                               layout=layout, **options)


def _names(paths) -> set[str]:
    return {Path(p).name for p in paths}


# ----------------------------------------------------------------------------- refused folders
def _empty_class(root: Path) -> None:
    _dataset(root)
    (root / "empty").mkdir()


def _no_class_folders(root: Path) -> None:
    root.mkdir()
    (root / "loose.png").write_bytes(b"x")


def _only_system_folders(root: Path) -> None:
    for name in (".git", "__MACOSX", ".ipynb_checkpoints", "@eaDir"):
        (root / name).mkdir(parents=True)
        (root / name / "x.png").write_bytes(b"x")


def _class_of_system_files(root: Path) -> None:
    _dataset(root)
    clutter = root / "clutter"
    clutter.mkdir()
    for name in ("Thumbs.db", ".DS_Store", "._photo.jpg", "desktop.ini"):
        (clutter / name).write_bytes(b"\0\0\0\0")


def _root_is_a_file(root: Path) -> None:
    root.write_bytes(b"not a folder")


def _train_without_val(root: Path) -> None:
    _dataset(root / "train")


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (_empty_class, "empty: class folder has no images"),
        (_no_class_folders, "no class subfolders"),
        (_only_system_folders, "no class subfolders"),
        (_class_of_system_files, "clutter: class folder has no images"),
        (_root_is_a_file, "is a file, not a folder"),
        (lambda root: None, "folder does not exist"),
        (_train_without_val, "has a 'train' folder but no 'val' folder"),
    ],
    ids=["empty_class", "no_class_folders", "only_system_folders", "class_of_system_files",
         "root_is_a_file", "missing_root", "train_without_val"],
)
def test_unusable_folder_is_refused_naming_it(tmp_path: Path, make, expected: str) -> None:
    root = tmp_path / "data"
    make(root)
    with pytest.raises(DatasetError) as error:
        scan_dataset(root, verify=True)
    assert str(root) in str(error.value) and expected in str(error.value)


def test_one_class_only_is_refused_by_the_engine(tmp_path: Path) -> None:
    root = write_shape_dataset(tmp_path / "data", classes=("circle",), per_class=4)
    end = train(_tiny_config(root, tmp_path / "runs"))
    assert end.status == "failed"
    assert end.error == (f"{root}: needs at least 2 class folders, found 1 ('circle'); a "
                         "classifier tells classes apart, so add a folder of images for each "
                         "other class")


def test_a_class_of_one_image_trains_and_is_named_as_too_few_to_validate(tmp_path: Path) -> None:
    root = write_shape_dataset(tmp_path / "data", classes=("circle", "square", "triangle"),
                               per_class=[1, 5, 5], size=(32, 32))
    messages: list[tuple[str, str]] = []

    class Messages(Callback):
        def on_message(self, event) -> None:
            messages.append((event.level, event.text))

    end = train(_tiny_config(root, tmp_path / "runs"), Messages())
    assert end.status == "completed", end.error
    named = [(level, text) for level, text in messages if "too few to validate" in text]
    assert named == [("warning", f"{root / 'circle'}: class 'circle' has only 1 image, too few "
                                 "to validate: it stays in training and its accuracy cannot be "
                                 "measured; add at least one more image to validate it")]


def test_one_image_in_every_class_is_refused_saying_what_to_add(tmp_path: Path) -> None:
    root = write_shape_dataset(tmp_path / "data", classes=("circle", "square"), per_class=1,
                               size=(32, 32))
    end = train(_tiny_config(root, tmp_path / "runs"))
    assert end.status == "failed"
    assert end.error == (f"{root}: no validation images: no class has 2 usable images to split; "
                         "add a val/ folder, or at least 2 images to a class for the automatic "
                         "split")


# ----------------------------------------------------------------------------- clutter and links
def test_system_folders_and_files_are_ignored_silently(tmp_path: Path) -> None:
    root = _dataset(tmp_path / "data")
    for name in (".git", "__MACOSX", ".ipynb_checkpoints", "@eaDir", "$RECYCLE.BIN"):
        (root / name / "inner").mkdir(parents=True)
        (root / name / "inner" / "x.png").write_bytes(b"x")
    circle = root / "circle"
    (circle / "__MACOSX").mkdir()
    (circle / "__MACOSX" / "._circle_0000.png").write_bytes(b"\0" * 64)
    for name in ("Thumbs.db", ".DS_Store", "._circle_0000.png", "desktop.ini"):
        (circle / name).write_bytes(b"\0" * 64)

    scan = scan_dataset(root, val_fraction=0.5, verify=True)

    assert scan.class_names == list(CLASSES)
    assert scan.skipped == []
    assert len(scan.train) + len(scan.val) == 8


def test_a_hidden_image_is_reported_not_used(tmp_path: Path) -> None:
    root = _dataset(tmp_path / "data")
    (root / "circle" / ".secret.png").write_bytes(b"x")
    scan = scan_dataset(root, val_fraction=0.5)
    assert [(Path(s.path).name, s.reason) for s in scan.skipped] == [(".secret.png", "hidden file")]


@pytest.mark.timeout(10)
@pytest.mark.parametrize("target", ["class_folder", "dataset_root"])
def test_a_symlink_loop_is_walked_once(tmp_path: Path, target: str) -> None:
    root = _dataset(tmp_path / "data")
    pointee = root / "circle" if target == "class_folder" else root
    (root / "circle" / "loop").symlink_to(pointee, target_is_directory=True)
    scan = scan_dataset(root, val_fraction=0.5)
    circle = [p for p, label in scan.train + scan.val if label == 0]
    assert len(circle) == len(set(map(os.path.realpath, circle)))  # no file twice


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda path: path.symlink_to(path),
         "cannot read file (Too many levels of symbolic links)"),
        (lambda path: path.symlink_to(path.parent / "gone.png"),
         "cannot read file (No such file or directory)"),
        (os.mkfifo, "not a regular file"),
    ],
    ids=["self_symlink", "dangling_symlink", "fifo"],
)
def test_a_link_or_pipe_posing_as_an_image_is_skipped_with_a_reason(
    tmp_path: Path, make, reason: str
) -> None:
    root = _dataset(tmp_path / "data")
    path = root / "circle" / "odd.png"
    make(path)
    scan = scan_dataset(root, val_fraction=0.5, verify=True)
    assert [(s.path, s.reason) for s in scan.skipped] == [(str(path), reason)]


def test_a_folder_the_os_refuses_to_list_is_named(tmp_path: Path, monkeypatch) -> None:
    root = _dataset(tmp_path / "data")
    locked = root / "circle" / "locked"
    locked.mkdir()
    real_scandir = os.scandir

    def refusing_scandir(path="."):
        if os.fspath(path) == str(locked):
            raise PermissionError(13, "Permission denied", str(locked))
        return real_scandir(path)

    # Root may read any folder, so the refusal is injected where the OS would give it.
    monkeypatch.setattr(os, "scandir", refusing_scandir)
    with pytest.raises(DatasetError, match=f"{locked}: cannot list folder \\(Permission denied"):
        scan_dataset(root)


# ----------------------------------------------------------------------------- names
def test_unicode_spaces_and_long_paths_scan_load_and_train(tmp_path: Path) -> None:
    deep = tmp_path / ("very long folder name " * 5).strip()
    for level in range(3):
        deep = deep / f"level {level} {'ü' * 40}"
    root = _dataset(deep / "Daten mit Leerzeichen")
    (root / "circle").rename(root / "Katzen ünd Hunde")
    (root / "square").rename(root / "猫 の 写真")
    for index, path in enumerate(sorted(root.rglob("*.png"))):
        path.rename(path.with_name(f"фото № {index}.png"))
    scan = scan_dataset(root, val_fraction=0.5, verify=True)
    assert len(str(scan.train[0][0])) > 300
    assert scan.skipped == [] and len(scan.train) + len(scan.val) == 8
    assert tuple(load_image_uint8(scan.train[0][0], 32).shape) == (3, 32, 40)
    end = train(_tiny_config(root, tmp_path / "runs"))
    assert end.status == "completed", end.error


def test_a_file_name_that_is_not_utf8_is_reported_intact(tmp_path: Path) -> None:
    root = _dataset(tmp_path / "data")
    raw_name = b"caf\xe9 (latin-1).png"  # not valid UTF-8: Python holds it as a surrogate
    broken = os.path.join(os.fsencode(root / "circle"), raw_name)
    with open(broken, "wb") as handle:
        handle.write(b"not a png")
    path = os.fsdecode(broken)

    scan = scan_dataset(root, val_fraction=0.5)
    assert path in {p for p, _ in scan.train + scan.val}
    log = tmp_path / "failures.tsv"
    dataset = ImageSampleDataset([(path, 0)], build_eval_transform(_tiny_config(root, tmp_path)),
                                 32, True, None, str(log))
    assert dataset[0][1] == IGNORE_LABEL
    assert read_failure_log(str(log)) == [(path, "not an image Pillow can identify")]


def test_train_and_val_with_different_classes_are_reported(tmp_path: Path) -> None:
    root = _dataset(tmp_path / "data", layout="train_val", val_per_class=2)
    (root / "val" / "circle").rename(root / "val" / "oval")
    scan = scan_dataset(root)
    warnings = "\n".join(scan.warnings())
    assert "class 'oval' has no train folder; its 2 val images are skipped" in warnings
    assert "class 'circle' has no val folder" in warnings


# ----------------------------------------------------------------------------- during a run
class _Recorder(Callback):
    def __init__(self, on_start=None, on_epoch=None) -> None:
        self.messages: list[str] = []
        self.epochs: list[int] = []
        self._on_start = on_start
        self._on_epoch = on_epoch

    def on_run_start(self, event) -> None:
        if self._on_start:
            self._on_start()

    def on_epoch_end(self, event) -> None:
        self.epochs.append(event.epoch)
        if self._on_epoch:
            self._on_epoch(event.epoch)

    def on_message(self, event) -> None:
        self.messages.append(event.text)


def _tiny_config(root: Path, output: Path, **changes) -> TrainConfig:
    base = TrainConfig(
        data_root=str(root), model="small_cnn", weights="none", finetune="full",
        crop_mode="standard", resize_size=32, crop_size=28, batch_size=4, epochs=1,
        optimizer="sgd", lr=0.01, scheduler="none", workers=0, output_dir=str(output),
        cache_images=False, cache_features=False, seed=1,
    )
    return base.replace(**changes)


@pytest.mark.parametrize("workers", [0, 1])
def test_a_file_deleted_after_the_scan_is_skipped_and_the_run_completes(
    tmp_path: Path, workers: int
) -> None:
    root = _dataset(tmp_path / "data", per_class=6, layout="train_val", val_per_class=2)
    doomed = root / "train" / "square" / "square_0002.png"
    recorder = _Recorder(on_start=doomed.unlink)  # the scan is done, no batch is read yet

    # Through the loader, which reads every image again each epoch (kept on the device, the
    # image would have been read before the file went).
    end = train(_tiny_config(root, tmp_path / "runs", workers=workers, images_on_device=False),
                recorder)

    assert end.status == "completed", end.error
    assert recorder.epochs == [1]
    text = "\n".join(recorder.messages)
    assert f"1 image(s) could not be decoded and were left out: {doomed}" in text
    failures = read_failure_log(str(Path(end.run_dir) / DECODE_FAILURES))
    assert [path for path, _ in failures] == [str(doomed)]
    assert "No such file or directory" in failures[0][1]


@pytest.mark.parametrize("workers", [0, 1])
def test_too_many_broken_files_stop_the_run_and_keep_the_last_epoch(
    tmp_path: Path, workers: int
) -> None:
    root = _dataset(tmp_path / "data", per_class=6, layout="train_val", val_per_class=2)
    victims = sorted((root / "train" / "circle").glob("*.png"))[:4]

    def break_files(epoch: int) -> None:
        if epoch == 1:  # the first epoch is saved; the second meets the damage
            for path in victims:
                path.write_bytes(b"overwritten by a sync client")

    recorder = _Recorder(on_epoch=break_files)
    config = _tiny_config(root, tmp_path / "runs", epochs=3, workers=workers,
                          max_failed_images=2, images_on_device=False)

    end = train(config, recorder)

    assert end.status == "failed"
    assert end.error.startswith("max_failed_images: ")
    assert "more than the 2 allowed" in end.error
    named = [str(p) for p in victims if str(p) in end.error]
    assert len(named) >= 3  # the message names the files, not just a count
    assert recorder.epochs == [1] and end.epochs_completed == 1
    checkpoint = load_checkpoint(end.last_checkpoint_path)
    assert checkpoint["epoch"] == 1
