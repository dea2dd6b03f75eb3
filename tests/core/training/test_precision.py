"""The precision a run trains in: resolved from amp/amp_dtype/device, used by every step."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from workbench.core.data.synthetic_images import write_shape_dataset
from workbench.core.devices.gpu_monitor import GpuMonitor
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.control import RunControl
from workbench.core.runs.events import Callback, Message, RunStart
from workbench.core.training.engine import train
from workbench.core.training.precision import FLOAT32, resolve_precision
from workbench.core.training.steps import NonFiniteLossError, StepContext, run_training_steps


def _never_called() -> bool:
    raise AssertionError("bfloat16 support should not be asked here")


@pytest.mark.parametrize("bf16", [True, False])
def test_auto_picks_bfloat16_where_the_gpu_supports_it_else_float16_with_a_scaler(bf16):
    precision = resolve_precision(True, "auto", "cuda:0", bf16_supported=lambda: bf16)
    assert precision.autocast
    assert precision.dtype == (torch.bfloat16 if bf16 else torch.float16)
    assert precision.grad_scaler is (not bf16)
    assert precision.label == ("mixed bfloat16" if bf16 else "mixed float16 with loss scaling")


def test_a_forced_dtype_is_kept_and_only_float16_scales_the_loss():
    forced16 = resolve_precision(True, "float16", "cuda:1", bf16_supported=_never_called)
    forced_bf16 = resolve_precision(True, "bfloat16", "cuda", bf16_supported=_never_called)
    assert (forced16.dtype, forced16.grad_scaler) == (torch.float16, True)
    assert (forced_bf16.dtype, forced_bf16.grad_scaler) == (torch.bfloat16, False)


@pytest.mark.parametrize("amp, dtype, device", [
    (True, "bfloat16", "cpu"), (True, "auto", "cpu"), (False, "bfloat16", "cuda:0"),
])
def test_cpu_or_amp_off_means_float32(amp, dtype, device):
    assert resolve_precision(amp, dtype, device, bf16_supported=_never_called) == FLOAT32
    assert FLOAT32.label == "float32"


def test_an_unknown_dtype_names_the_field():
    with pytest.raises(ValueError, match="amp_dtype: 'half'"):
        resolve_precision(True, "half", "cuda:0")


class _Events(Callback):
    def __init__(self) -> None:
        self.starts: list[RunStart] = []
        self.messages: list[Message] = []

    def on_run_start(self, event: RunStart) -> None:
        self.starts.append(event)

    def on_message(self, event: Message) -> None:
        self.messages.append(event)


def test_a_cpu_run_asking_for_bfloat16_trains_in_float32_and_says_so(tmp_path):
    data = write_shape_dataset(tmp_path / "data", per_class=4, size=(40, 32),
                               layout="train_val", val_per_class=2)
    config = TrainConfig(
        data_root=str(data), model="small_cnn", weights="none", finetune="full",
        crop_mode="standard", resize_size=32, crop_size=28, batch_size=8, epochs=1,
        workers=0, output_dir=str(tmp_path / "runs"), device="cpu", amp=True,
        amp_dtype="bfloat16", cache_images=False,
    )
    events = _Events()
    end = train(config, events)
    assert end.status == "completed", end.error
    assert events.starts[0].precision == "float32" and not events.starts[0].amp
    assert any("this CPU run uses float32" in m.text for m in events.messages)


def _context(amp: bool, dtype: torch.dtype, model: nn.Module, scaler_on: bool) -> StepContext:
    return StepContext(
        model=model, device="cpu", optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
        scaler=torch.amp.GradScaler("cpu", enabled=scaler_on), amp=amp, crops=1,
        strategy="average_logits", class_weights=None, callback=Callback(),
        control=RunControl(), gpu_monitor=GpuMonitor("cpu"), amp_dtype=dtype,
    )


def test_steps_autocast_to_the_resolved_dtype():
    model = nn.Linear(4, 3)
    with _context(True, torch.bfloat16, model, scaler_on=False).autocast():
        assert model(torch.ones(2, 4)).dtype == torch.bfloat16
    with _context(False, torch.bfloat16, model, scaler_on=False).autocast():
        assert model(torch.ones(2, 4)).dtype == torch.float32


def test_a_nan_loss_without_a_grad_scaler_stops_before_the_update_under_bfloat16():
    # bfloat16 runs have no GradScaler to skip a non-finite step, so the step loop must stop.
    model = nn.Linear(4, 3)
    before = [p.detach().clone() for p in model.parameters()]
    ctx = _context(True, torch.bfloat16, model, scaler_on=False)
    inputs = torch.full((2, 4), float("nan"))
    batches = iter([(inputs, torch.tensor([0, 1]))])
    with pytest.raises(NonFiniteLossError, match="step 1: the loss is nan"):
        run_training_steps(ctx, batches, 1, model, lambda x, y: (x, y))
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
