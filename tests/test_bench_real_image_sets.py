"""Real image sets written as class folders: the pixels are the shipped scans, split cleanly."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from workbench.bench.real_image_sets import write_real_set


def _folder_images(folder):
    return sorted(np.asarray(Image.open(path)).tobytes() for path in folder.glob("*.png"))


def test_digits_are_sklearns_scans_as_dark_ink_on_white_with_thirty_percent_held_out(tmp_path):
    from sklearn.datasets import load_digits

    digits = load_digits()
    root = write_real_set("digits", tmp_path / "digits")
    for digit in (0, 7):
        scans = digits.images[digits.target == digit]
        # 16 is full ink in the scans; written black on white (255 - level * 255 / 16).
        expected = sorted((255 - np.round(scan * 255 / 16)).astype(np.uint8).tobytes()
                          for scan in scans)
        train = _folder_images(root / "train" / str(digit))
        val = _folder_images(root / "val" / str(digit))
        assert sorted(train + val) == expected
        assert len(val) == round(0.3 * len(scans))
        assert not set(train) & set(val)


def test_a_training_subset_keeps_the_same_validation_images(tmp_path):
    full = write_real_set("digits", tmp_path / "full")
    small = write_real_set("digits", tmp_path / "small", train_per_class=20)
    assert len(list((small / "train" / "3").glob("*.png"))) == 20
    assert _folder_images(small / "val" / "3") == _folder_images(full / "val" / "3")


def test_an_unknown_set_is_named():
    with pytest.raises(ValueError, match="unknown image set 'mnist'"):
        write_real_set("mnist", "unused")


def test_a_missing_package_names_the_bench_extra(monkeypatch, tmp_path):
    # Both names: once another test has imported skimage.data, ``from skimage.data import``
    # finds that submodule without looking at its parent.
    monkeypatch.setitem(__import__("sys").modules, "skimage", None)
    monkeypatch.setitem(__import__("sys").modules, "skimage.data", None)
    with pytest.raises(ImportError, match=r"image set 'faces' needs skimage.*workbench\[bench\]"):
        write_real_set("faces", tmp_path / "faces")
