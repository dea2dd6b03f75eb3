"""Which floating-point precision a run trains in, decided once from the config and the device.

Mixed precision is a CUDA feature. ``amp_dtype`` "auto" picks bfloat16 on GPUs that support it
(Ampere and newer): it has float32's range, so gradients cannot underflow and no GradScaler is
needed. Older GPUs (a GTX 1650, a V100) get float16 with a GradScaler. "float16" and "bfloat16"
force one or the other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Precision:
    """How the forward pass runs: autocast on or off, its dtype, and whether to scale the loss."""

    autocast: bool
    dtype: torch.dtype
    grad_scaler: bool

    @property
    def label(self) -> str:
        """'float32', 'mixed bfloat16' or 'mixed float16 with loss scaling'."""
        if not self.autocast:
            return "float32"
        name = str(self.dtype).removeprefix("torch.")
        return f"mixed {name} with loss scaling" if self.grad_scaler else f"mixed {name}"


FLOAT32 = Precision(autocast=False, dtype=torch.float32, grad_scaler=False)


def resolve_precision(
    amp: bool,
    amp_dtype: str,
    device: str,
    bf16_supported: Callable[[], bool] | None = None,
) -> Precision:
    """The precision of a run with config ``amp``/``amp_dtype`` on ``device``.

    Args:
        amp: the config's ``amp`` switch.
        amp_dtype: "auto", "float16" or "bfloat16".
        device: a resolved device name ("cpu", "cuda:0", ...); only CUDA gets mixed precision.
        bf16_supported: asked only for "auto" on CUDA; ``torch.cuda.is_bf16_supported`` when
            None (injectable so the choice can be tested without a GPU).

    Raises:
        ValueError: ``amp_dtype`` is not one of the three names.
    """
    if amp_dtype not in ("auto", "float16", "bfloat16"):
        raise ValueError(f"amp_dtype: '{amp_dtype}' is not one of auto, float16, bfloat16")
    if not amp or not device.startswith("cuda"):
        return FLOAT32
    if amp_dtype == "auto":
        supported = bf16_supported or torch.cuda.is_bf16_supported
        amp_dtype = "bfloat16" if supported() else "float16"
    if amp_dtype == "bfloat16":
        return Precision(autocast=True, dtype=torch.bfloat16, grad_scaler=False)
    return Precision(autocast=True, dtype=torch.float16, grad_scaler=True)
