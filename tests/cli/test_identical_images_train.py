"""A user's first smoke test, two classes of ten identical images each, trains from the
command line: each class validates on 2 of its copies and the run says before its first epoch
that validation then measures memorisation."""

from __future__ import annotations

import json
import random
from pathlib import Path

from workbench.cli import main
from workbench.core.data.health.generated_folders import distinct_image


def test_two_classes_of_ten_identical_images_train_with_the_reason(tmp_path: Path, capsys):
    rng = random.Random(1)
    root = tmp_path / "webcam"
    for label in ("mug", "pen"):
        (root / label).mkdir(parents=True)
        image = distinct_image(rng).resize((20, 20))
        for index in range(10):
            image.save(root / label / f"capture{index}.png")  # ten identical files

    code = main(["train", "--data-root", str(root), "--model", "small_cnn", "--epochs", "1",
                 "--device", "cpu", "--workers", "0", "--output-dir", str(tmp_path / "runs")])

    log = capsys.readouterr().err
    assert code == 0, log
    assert "run completed after 1 epoch(s)" in log
    lines = log.splitlines()
    first_epoch = next(i for i, line in enumerate(lines) if line.startswith("epoch 1"))
    notes = [i for i, line in enumerate(lines)
             if "all 10 images of class 'mug' are copies of one another" in line
             and "memorisation" in line]
    assert notes and notes[0] < first_epoch, log
    run_dir = next((tmp_path / "runs").iterdir())
    dataset = json.loads((run_dir / "config.json").read_text())["dataset"]
    # round(10 x 0.2) = 2 copies of each class validate, 8 train.
    assert (dataset["train_counts"], dataset["val_counts"]) == ([8, 8], [2, 2])
