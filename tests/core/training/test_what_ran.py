"""A run records what ran, not only what was asked: on a CPU, amp, channels_last and
pin_memory take no effect, so config.json and the report say float32, contiguous, no pinning
beside the settings as asked."""

from __future__ import annotations

import json
from pathlib import Path

from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import Callback
from workbench.core.runs.run_report import run_report_html
from workbench.core.training.engine import train


def test_a_cpu_run_records_float32_contiguous_and_no_pinning(tmp_path: Path):
    data = write_shape_dataset(tmp_path / "shapes", per_class=4, size=(28, 28))
    config = TrainConfig(data_root=str(data), model="small_cnn", weights="none", finetune="full",
                         epochs=1, workers=0, device="cpu", output_dir=str(tmp_path / "runs"),
                         amp=True, channels_last=True, pin_memory=True)
    end = train(config, Callback())
    assert end.status == "completed", end.error

    document = json.loads((Path(end.run_dir) / "config.json").read_text())
    assert document["config"]["amp"] is True  # what was asked stays, to rerun on a GPU
    assert document["ran"] == {"device": "cpu", "precision": "float32",
                               "memory_format": "contiguous", "pin_memory": False}
    html = run_report_html(end.run_dir)
    assert "float32, contiguous memory format, pinned memory no on cpu" in html
    assert "true asked; ran: float32" in html
    assert "true asked; ran: contiguous" in html
    assert "true asked; ran: no" in html
