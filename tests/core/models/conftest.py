"""A model whose output depends on whether the process flushes denormal numbers."""

from __future__ import annotations

import pytest
import torch
from torch import nn


class DenormalSensitive(nn.Module):
    """Logits that pass through a denormal number: zero where the process flushes denormals
    to zero (``torch.set_flush_denormal``), the input itself where it does not."""

    def __init__(self) -> None:
        super().__init__()
        # Normal numbers: a stored denormal could itself be flushed when the model is copied.
        self.register_buffer("small", torch.tensor(1e-20))
        self.register_buffer("large", torch.tensor(1e20))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        values = x.flatten(1)[:, :3]
        # values * 1e-40 lies below float32's smallest normal number (1.2e-38).
        return values * self.small * self.small * self.large * self.large


@pytest.fixture
def flushing_denormals() -> DenormalSensitive:
    """A ``DenormalSensitive`` model, with this process flushing denormals for the test (a
    fresh process does not, so the two compute differently); skips where the CPU cannot."""
    if not torch.set_flush_denormal(True):
        pytest.skip("this CPU cannot flush denormals")
    yield DenormalSensitive()
    torch.set_flush_denormal(False)
