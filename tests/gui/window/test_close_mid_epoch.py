"""Closing the window or pressing Stop mid-epoch, Start pressed twice, and the smaller batch
offered after running out of memory: one run at a time, and the process always exits cleanly.

Qt 6 aborts the whole process when a running QThread is destroyed, so closing the real window
mid-epoch is tested in a child process, whose exit code and stderr tell what happened.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import torch
import torchvision
from torch import nn

RUN_TIMEOUT_MS = 120_000
CLOSE_BOUND_S = 5.0

# The child: the real window, a real run on a tiny folder with one loader process, closed at
# its sixth step of 24. It prints when it closed and how the run ended, then exits with exec()'s
# code.
CHILD = r"""
import json, sys, time
from PySide6.QtCore import QSettings, QTimer
from workbench.core.runs.config import TrainConfig
from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.gui.app import create_application
from workbench.gui.window.main_window import MainWindow

folder = sys.argv[1]
QSettings.setDefaultFormat(QSettings.Format.IniFormat)
QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, folder + "/settings")
app = create_application()
data = write_shape_dataset(folder + "/shapes", per_class=12, size=(40, 32), layout="train_val",
                           val_per_class=2)
window = MainWindow()
window.ask_before_closing_during_training = False
window.show()
window.apply_config(TrainConfig(
    data_root=str(data), model="resnet18", weights="none", finetune="full",
    crop_mode="standard", resize_size=32, crop_size=28, batch_size=2, epochs=20, workers=1,
    output_dir=folder + "/runs", device="cpu", amp=False, channels_last=False))
report = {}
window.controller.run_ended.connect(lambda end: report.update(status=end.status))
window.controller.finished.connect(lambda: report.update(finished=time.time()))

def on_step(event):
    if event.step == 6 and "closed" not in report:  # past the slow first steps
        report.update(closed=time.time(), step=event.step, steps=event.steps_in_epoch)
        QTimer.singleShot(0, window.close)

window.controller.step_finished.connect(on_step)
QTimer.singleShot(0, window.start_training)
code = app.exec()
print(json.dumps(report), flush=True)
sys.exit(code)
"""


def test_closing_the_window_mid_epoch_ends_the_run_and_exits_cleanly(tmp_path):
    script = tmp_path / "close_mid_epoch.py"
    script.write_text(CHILD)
    done = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True,
                          text=True, timeout=300)
    exited = time.time()
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Destroyed while thread" not in done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["status"] == "cancelled"
    assert report["step"] < report["steps"]  # the close came mid-epoch
    assert report["finished"] - report["closed"] < CLOSE_BOUND_S
    assert exited - report["closed"] < CLOSE_BOUND_S + 5.0  # interpreter teardown included
    checkpoints = list((tmp_path / "runs").rglob("last.pt"))
    assert checkpoints == []  # no epoch finished, so no file claims one


def test_start_twice_and_stop_then_start_run_one_at_a_time(qtbot, tiny_config,
                                                           no_dangling_qthreads, window):
    window.apply_config(tiny_config.replace(epochs=50))
    starts, ends = [], []
    window.controller.run_started.connect(starts.append)
    window.controller.run_ended.connect(ends.append)
    qtbot.waitUntil(window.controls.start_button.isEnabled, timeout=30_000)
    with qtbot.waitSignal(window.controller.step_finished, timeout=RUN_TIMEOUT_MS):
        qtbot.mouseClick(window.controls.start_button, _left())
        qtbot.mouseClick(window.controls.start_button, _left())  # a double click
        assert not window.start_training()
    qtbot.mouseClick(window.controls.stop_button, _left())
    assert not window.start_training()  # still stopping: refused, not queued
    assert not window.controls.start_button.isEnabled()
    with qtbot.waitSignal(window.controller.finished, timeout=RUN_TIMEOUT_MS):
        pass
    assert window.controls.start_button.isEnabled()
    assert [e.status for e in ends] == ["cancelled"] and len(starts) == 1
    assert len(no_dangling_qthreads) == 1


def _left():
    from PySide6.QtCore import Qt

    return Qt.MouseButton.LeftButton


def test_out_of_memory_offers_half_the_batch_and_restarts_when_accepted(qtbot, tiny_config,
                                                                        window):
    limit = 12  # images per forward: batch 8 of five crops (40) is refused, 2 (10) fits

    def memory_limit(module: nn.Module, args):
        if isinstance(module, torchvision.models.ResNet) and module.training \
                and args[0].shape[0] > limit:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.00 GiB")

    window.apply_config(tiny_config.replace(model="resnet18", epochs=1, batch_size=8,
                                            max_steps_per_epoch=2))
    offers, ends = [], []
    window.confirm_retry_smaller_batch = lambda end: offers.append(end) or True
    window.controller.run_ended.connect(ends.append)
    handle = nn.modules.module.register_module_forward_pre_hook(memory_limit)
    try:
        assert window.start_training()
        qtbot.waitUntil(lambda: len(ends) == 3 and not window.controller.is_running(),
                        timeout=RUN_TIMEOUT_MS)
    finally:
        handle.remove()
    assert [(e.status, e.retry_batch_size) for e in ends] == [
        ("failed", 4), ("failed", 2), ("completed", 0)]
    assert [end.retry_batch_size for end in offers] == [4, 2]
    assert "ran out of memory at batch size 8" in offers[0].error
    assert window.config_form.config().batch_size == 2
    assert "Restarting with batch size 4." in window.log_panel.toPlainText()
