"""The precision a run trains in: resolved from amp/amp_dtype/device, used by every step."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.devices.gpu_monitor import GpuMonitor
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.control import RunControl
from workbench.core.runs.events import Callback, Message, RunStart
from workbench.core.training.engine import train
from workbench.core.training.precision import (
    FLOAT32,
    CardInfo,
    precision_for_card,
    precision_message,
    resolve_precision,
)
from workbench.core.training.steps import NonFiniteLossError, StepContext, run_training_steps

# Real cards: (name as CUDA reports it, compute capability, what "auto" trains in).
CARDS = [
    ("NVIDIA GeForce GTX 1080", (6, 1), "float32"),
    ("NVIDIA GeForce GTX 1050 Ti", (6, 1), "float32"),
    ("Tesla P100-PCIE-16GB", (6, 0), "float32"),
    ("NVIDIA GeForce GTX 1650", (7, 5), "float32"),
    ("NVIDIA GeForce GTX 1660 Ti", (7, 5), "float32"),
    ("NVIDIA GeForce MX450", (7, 5), "float32"),
    ("Tesla V100-SXM2-16GB", (7, 0), "mixed float16 with loss scaling"),
    ("NVIDIA GeForce RTX 2060", (7, 5), "mixed float16 with loss scaling"),
    ("Tesla T4", (7, 5), "mixed float16 with loss scaling"),
    ("NVIDIA GeForce RTX 3090", (8, 6), "mixed bfloat16"),
    ("NVIDIA A100-SXM4-40GB", (8, 0), "mixed bfloat16"),
    ("NVIDIA GeForce RTX 4090 Laptop GPU", (8, 9), "mixed bfloat16"),
    ("NVIDIA H200", (9, 0), "mixed bfloat16"),
]


@pytest.mark.parametrize("name, capability, expected", CARDS)
def test_auto_precision_follows_the_card(name, capability, expected):
    precision = precision_for_card(capability, name, amp=True)
    assert precision.label == expected
    assert name in precision.reason
    assert precision.grad_scaler is (precision.dtype == torch.float16)


def test_cards_without_tensor_cores_say_why_amp_is_not_used():
    precision = precision_for_card((7, 5), "NVIDIA GeForce GTX 1650", amp=True)
    assert precision == FLOAT32
    assert "no tensor cores" in precision.reason


@pytest.mark.parametrize("name, capability, _expected", CARDS)
def test_amp_off_is_float32_on_every_card(name, capability, _expected):
    assert precision_for_card(capability, name, amp=False) == FLOAT32


def test_a_forced_dtype_is_kept_on_any_card_and_only_float16_scales_the_loss():
    gtx = CardInfo((7, 5), "NVIDIA GeForce GTX 1650")
    forced16 = resolve_precision(True, "float16", "cuda:1", card=gtx)
    forced_bf16 = resolve_precision(True, "bfloat16", "cuda", card=gtx)
    assert (forced16.dtype, forced16.grad_scaler) == (torch.float16, True)
    assert (forced_bf16.dtype, forced_bf16.grad_scaler) == (torch.bfloat16, False)


def test_resolve_asks_the_card_only_for_cuda_with_amp():
    rtx = CardInfo((8, 6), "NVIDIA GeForce RTX 3090")
    assert resolve_precision(True, "auto", "cuda:0", card=rtx).label == "mixed bfloat16"
    # On the CPU no card is looked up (this machine may have none).
    assert resolve_precision(True, "auto", "cpu") == FLOAT32
    assert resolve_precision(False, "bfloat16", "cuda:0") == FLOAT32
    assert FLOAT32.label == "float32"


def test_an_unknown_dtype_names_the_field():
    with pytest.raises(ValueError, match="amp_dtype: 'half'"):
        resolve_precision(True, "half", "cuda:0")
    with pytest.raises(ValueError, match="amp_dtype: 'half'"):
        precision_for_card((8, 0), "NVIDIA A100", True, "half")


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


def test_the_run_log_says_why_a_card_trains_in_float32_or_mixed_precision():
    gtx = precision_for_card((7, 5), "NVIDIA GeForce GTX 1650", amp=True)
    assert precision_message(gtx, True, "auto") == (
        "Training in float32: NVIDIA GeForce GTX 1650 (compute capability 7.5) has no tensor "
        "cores, where float16 autocast runs slower than float32, so amp is not used (set "
        "amp_dtype float16 to force it).")
    rtx = precision_for_card((8, 6), "NVIDIA GeForce RTX 3090", amp=True)
    assert precision_message(rtx, True, "auto").startswith(
        "Training in mixed bfloat16 precision (amp_dtype auto): NVIDIA GeForce RTX 3090")
    assert precision_message(FLOAT32, True, "bfloat16") == \
        "Mixed precision (amp) is a CUDA feature; this CPU run uses float32."
    assert precision_message(FLOAT32, False, "auto") is None
