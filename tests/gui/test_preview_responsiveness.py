"""A large JPEG is decoded for the preview in the thread pool while the UI thread keeps running.

The decode waits, in its pool thread, until a 10 ms timer on the UI thread has ticked a few
times: that only happens if the UI thread is free while the preview is pending. How late the
UI thread runs meanwhile is measured by ``workbench bench --only ui``.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

import workbench.core.data.five_crop_preview
from workbench.bench.ui_latency_benchmark import write_large_photo
from workbench.core.runs.config import TrainConfig
from workbench.gui.panels.preview.augmentation_preview_panel import AugmentationPreviewPanel

TICKS_DURING_DECODE = 3


@pytest.fixture(scope="module")
def large_photo(tmp_path_factory) -> Path:
    return write_large_photo(tmp_path_factory.mktemp("photo") / "large.jpg", (2000, 1500))




def test_preview_decodes_in_the_pool_while_the_ui_thread_keeps_ticking(
    qtbot, monkeypatch, large_photo, ui_ticks
):
    heartbeat = ui_ticks
    real_preview = workbench.core.data.five_crop_preview.five_crop_preview
    work: list[tuple[int, int]] = []  # (thread, UI ticks seen while this decode was pending)

    def preview_after_ui_ticks(*args, **kwargs):
        first = heartbeat.ticks
        deadline = time.monotonic() + 10
        while heartbeat.ticks < first + TICKS_DURING_DECODE and time.monotonic() < deadline:
            time.sleep(0.005)
        work.append((threading.get_ident(), heartbeat.ticks - first))
        return real_preview(*args, **kwargs)

    monkeypatch.setattr(workbench.core.data.five_crop_preview, "five_crop_preview",
                        preview_after_ui_ticks)
    panel = AugmentationPreviewPanel()
    qtbot.addWidget(panel)
    panel.show()
    qtbot.waitExposed(panel)
    heartbeat.timer.start()
    settings = [TrainConfig(crop_mode="five_crop", resize_size=512, crop_size=224),
                TrainConfig(crop_mode="standard", resize_size=256, crop_size=224)]
    statuses, previews = [], []
    for index, config in enumerate(settings):
        with qtbot.waitSignal(panel.preview_ready, timeout=30_000) as ready:
            panel.set_config(config)
            if index == 0:
                panel.set_image(str(large_photo))
        statuses.append(panel.status_label.text())
        previews.append(ready.args[0])
    heartbeat.timer.stop()
    assert panel.wait_for_preview(10_000)

    assert len(work) == len(settings)
    assert all(thread != threading.get_ident() for thread, _ in work)
    assert all(ticks >= TICKS_DURING_DECODE for _, ticks in work)
    assert statuses[0].startswith("5 crops of 224x224 from the 2000x1500 image resized to 682x512 "
                                  "(512 on the short side)")
    assert [len(p.train.crops) for p in previews] == [5, 1]
    assert previews[0].original_size == (2000, 1500)
