"""The images an export is measured on: decoded a chunk at a time, unreadable ones left out."""

from __future__ import annotations

import numpy as np

from tests.core.conftest import write_truncated_png
from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.data.health.exclusion_list import write_exclusion_file
from workbench.core.data.training_scan import scan_for_run
from workbench.core.models import export_measurement
from workbench.core.models.export_measurement import evaluation_images, image_logits


def test_validation_images_decode_a_chunk_at_a_time_and_skip_unreadable_ones(tmp_path,
                                                                           monkeypatch):
    monkeypatch.setattr(export_measurement, "_CHUNK", 2)  # images decoded and run at once
    root = write_shape_dataset(tmp_path / "data", classes=("circle", "square"), per_class=3,
                               size=(20, 20), layout="train_val", val_per_class=3)
    # Its header reads (the scan keeps it, as training's scan does); its pixels do not decode.
    write_truncated_png(root / "val" / "square" / "zz_broken.png")
    preprocessing = {"model": "small_cnn", "crop_mode": "five_crop", "resize_size": 20,
                     "crop_size": 16, "in_channels": 1}
    images = evaluation_images(str(root), ["circle", "square"], preprocessing)
    assert len(images.samples) == 7 and "7 validation images" in images.description

    chunks = list(images.chunks(2))
    # The broken file sorts last: its chunk has nothing to decode and is not yielded.
    assert [len(labels) for _, labels, _ in chunks] == [2, 2, 2]
    for crops, labels, k in chunks:
        assert k == 5 and crops.shape == (5 * len(labels), 1, 16, 16) and crops.dtype == np.uint8

    seen = []

    def runner(crops: np.ndarray) -> np.ndarray:
        seen.append(len(crops))
        # Logit of class 1 = the crops' mean brightness: known per image, any chunking.
        means = crops.reshape(len(crops), -1).mean(axis=1)
        return np.stack([np.zeros_like(means), means], axis=1).astype(np.float32)

    (logits,), labels = image_logits([runner], images)
    assert labels.tolist() == [0, 0, 0, 1, 1, 1]  # the broken square left out, order kept
    assert seen == [10, 10, 10]  # two images' five crops at a time, never the whole split
    expected = [images_mean for images_mean in
                (c.reshape(len(lab), 5, -1).mean(axis=(1, 2)) for c, lab, _ in chunks)]
    assert np.allclose(logits[:, 1], np.concatenate(expected), atol=1e-4)


def test_an_export_is_measured_on_the_images_its_run_validated_on(tmp_path):
    """A run that left files out (an exclusion list) validated without them: the export's
    accuracy must be measured on that same validation set, not on the folder split afresh."""
    root = write_shape_dataset(tmp_path / "data", classes=("circle", "square"), per_class=10,
                               size=(20, 20))
    every = sorted(str(path) for path in root.rglob("*.png"))
    plain = scan_for_run(root, 0.2, 0)
    left_out = [path for path, _ in plain.val][:2]  # two images the plain split validates on
    exclude = write_exclusion_file(tmp_path / "exclude.txt", str(root), left_out)
    run_scan = scan_for_run(root, 0.2, 0, exclude_file=str(exclude))
    preprocessing = {"model": "small_cnn", "crop_mode": "standard", "resize_size": 20,
                     "crop_size": 16, "in_channels": 1}

    images = evaluation_images(str(root), ["circle", "square"], preprocessing,
                               exclude_file=str(exclude))

    measured = sorted(path for path, _ in images.samples)
    assert measured == sorted(path for path, _ in run_scan.val)
    assert not set(measured) & {str(p) for p in left_out} and len(every) == 20
    assert f"{len(run_scan.val)} validation images" in images.description
