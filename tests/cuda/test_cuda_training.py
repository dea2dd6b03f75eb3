"""Real tiny runs on a CUDA device: float16 with a GradScaler, bfloat16, memory figures,
images kept on the device, and the export of what was trained there."""

from __future__ import annotations

import pytest
import torch

from workbench.core.models.export import export_model_file
from workbench.core.models.safe_load import load_tensors_file
from workbench.core.runs.events import Callback, Message, RunStart, StepStats
from workbench.core.training.engine import train


class Recorder(Callback):
    def __init__(self) -> None:
        self.starts: list[RunStart] = []
        self.steps: list[StepStats] = []
        self.messages: list[Message] = []

    def on_run_start(self, event: RunStart) -> None:
        self.starts.append(event)

    def on_step(self, event: StepStats) -> None:
        self.steps.append(event)

    def on_message(self, event: Message) -> None:
        self.messages.append(event)


def test_float16_with_a_grad_scaler_trains_and_checkpoints_the_scaler(cuda_config):
    events = Recorder()
    end = train(cuda_config.replace(amp_dtype="float16", epochs=2), events)
    assert end.status == "completed", end.error
    assert events.starts[0].precision == "mixed float16 with loss scaling"
    assert events.starts[0].device == "cuda:0" and events.starts[0].amp
    assert all(torch.isfinite(torch.tensor(step.loss)) for step in events.steps)
    state = torch.load(end.last_checkpoint_path, map_location="cpu", weights_only=True)
    assert state["scaler"] and state["scaler"]["scale"] > 0


def test_bfloat16_trains_without_a_scaler(cuda_config):
    if not torch.cuda.is_bf16_supported(including_emulation=False):
        pytest.skip(f"{torch.cuda.get_device_name(0)} has no bfloat16 in hardware")
    events = Recorder()
    end = train(cuda_config.replace(amp_dtype="bfloat16"), events)
    assert end.status == "completed", end.error
    assert events.starts[0].precision == "mixed bfloat16"


def test_step_events_report_allocated_reserved_and_peak_memory(cuda_config):
    events = Recorder()
    end = train(cuda_config, events)
    assert end.status == "completed", end.error
    step = events.steps[-1]
    total = torch.cuda.get_device_properties(0).total_memory
    assert step.memory_total == total
    assert 0 < step.memory_allocated <= step.memory_peak <= total
    assert step.memory_allocated <= step.memory_reserved <= total


def test_images_kept_on_the_device_train_with_channels_last(cuda_config):
    events = Recorder()
    end = train(cuda_config.replace(images_on_device=True, channels_last=True), events)
    assert end.status == "completed", end.error
    assert events.starts[0].images_on_device
    assert any("so they stay on cuda:0" in m.text for m in events.messages)


def test_a_model_trained_on_cuda_exports_and_verifies_on_the_cpu(cuda_config, tmp_path):
    end = train(cuda_config)
    assert end.status == "completed", end.error
    # The saved weights are CPU tensors: the file loads on a machine without a GPU.
    weights = load_tensors_file(end.best_model_path)
    assert weights
    result = export_model_file(end.best_model_path, tmp_path / "model.pt")
    assert result.max_abs_diff < 1e-3 and result.subprocess_max_abs_diff < 1e-3
    scripted = torch.jit.load(str(tmp_path / "model.pt"), map_location="cpu")
    logits = scripted(torch.randint(0, 256, (2, 3, 32, 32), dtype=torch.uint8))
    assert logits.shape == (2, 4)
