"""The step loop says in the log when throughput drops because the GPU throttles."""

from __future__ import annotations

import time

import torch
from torch import nn

from workbench.core.devices.gpu_monitor import GpuSample
from workbench.core.devices.throttle_detector import ThrottleWatch
from workbench.core.runs.control import RunControl
from workbench.core.runs.events import Callback, Message, StepStats
from workbench.core.training.steps import StepContext, run_training_steps

THERMAL = 0x20
STEPS = 40
HOT_FROM = 18


class _RecordedSensors:
    """Replays what NVML reported on a laptop that heats up at step ``HOT_FROM``."""

    def __init__(self) -> None:
        self.step = 0

    def sample(self) -> GpuSample:
        self.step += 1
        hot = self.step > HOT_FROM
        return GpuSample(99.0, 88.0 if hot else 70.0, 35.0 if hot else 48.0,
                         THERMAL if hot else 0x0, False)


class _Log(Callback):
    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.steps: list[StepStats] = []

    def on_message(self, event: Message) -> None:
        self.messages.append(event)

    def on_step(self, event: StepStats) -> None:
        self.steps.append(event)


def test_a_real_step_loop_that_slows_while_throttled_logs_one_warning():
    torch.manual_seed(0)
    model = nn.Linear(8, 2)
    sensors, log = _RecordedSensors(), _Log()

    def forward(inputs: torch.Tensor) -> torch.Tensor:
        # The card's clocks drop once it is hot: each step takes several times longer.
        time.sleep(0.12 if sensors.step >= HOT_FROM else 0.0)
        return model(inputs)

    ctx = StepContext(
        model=model, device="cpu", optimizer=torch.optim.SGD(model.parameters(), lr=0.01),
        scaler=torch.amp.GradScaler("cpu", enabled=False), amp=False, crops=1,
        strategy="average_logits", class_weights=None, callback=log, control=RunControl(),
        gpu_monitor=sensors, throttle_watch=ThrottleWatch(interval_s=0.0),
    )
    batches = iter([(torch.randn(4, 8), torch.tensor([0, 1, 0, 1]))] * STEPS)
    run_training_steps(ctx, batches, STEPS, forward, lambda x, y: (x, y))
    warnings = [m.text for m in log.messages if m.level == "warning"]
    assert len(warnings) == 1, warnings
    assert "because the GPU is throttled: thermal slowdown at 88 \u00b0C" in warnings[0]
    assert log.steps[-1].gpu_throttle_reasons == THERMAL and log.steps[-1].on_battery is False
