"""Which floating-point precision a run trains in, decided once from the config and the card.

Mixed precision is a CUDA feature, and whether it pays depends on the card. ``amp_dtype`` "auto"
asks :func:`precision_for_card`:

- bfloat16 on cards that have it in hardware (compute capability 8.0 and newer: Ampere, Ada,
  Hopper). It has float32's range, so gradients cannot underflow and no GradScaler is needed.
- float16 with a GradScaler on cards with tensor cores (Volta, Turing RTX: capability 7.x).
- float32 on cards without tensor cores: Pascal and older (GTX 10xx, capability 6.x) and the
  Turing chips built without them (GTX 16xx, MX450/MX550, capability 7.5). There float16
  autocast only adds casts and runs slower than float32 (NVIDIA apex issue #806).

"float16" and "bfloat16" force one or the other on any CUDA card: the user's measurement (for
instance ``workbench probe``) beats this table.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

# Turing chips without tensor cores report capability 7.5 like the RTX cards; only the name
# tells them apart (TU116/TU117: GTX 1630..1660 Ti, the laptop MX450 and MX550).
NO_TENSOR_CORE_NAMES = ("GTX 16", "MX450", "MX550")


@dataclass(frozen=True)
class Precision:
    """How the forward pass runs: autocast on or off, its dtype, and whether to scale the loss.

    ``reason`` says why this precision was chosen for the card (empty when nothing needs
    saying); it does not take part in comparisons.
    """

    autocast: bool
    dtype: torch.dtype
    grad_scaler: bool
    reason: str = field(default="", compare=False)

    @property
    def label(self) -> str:
        """'float32', 'mixed bfloat16' or 'mixed float16 with loss scaling'."""
        if not self.autocast:
            return "float32"
        name = str(self.dtype).removeprefix("torch.")
        return f"mixed {name} with loss scaling" if self.grad_scaler else f"mixed {name}"


FLOAT32 = Precision(autocast=False, dtype=torch.float32, grad_scaler=False)
BFLOAT16 = Precision(autocast=True, dtype=torch.bfloat16, grad_scaler=False)
FLOAT16 = Precision(autocast=True, dtype=torch.float16, grad_scaler=True)
AMP_DTYPES = ("auto", "float16", "bfloat16")


@dataclass(frozen=True)
class CardInfo:
    """What the precision choice needs to know about a CUDA card."""

    capability: tuple[int, int]
    name: str

    @classmethod
    def of_device(cls, device: str) -> CardInfo:
        """The card behind a resolved CUDA device name ('cuda:0')."""
        props = torch.cuda.get_device_properties(torch.device(device))
        return cls((props.major, props.minor), props.name)


def has_tensor_cores(capability: tuple[int, int], name: str) -> bool:
    """Volta (7.0) and newer have tensor cores, except the Turing chips named in
    ``NO_TENSOR_CORE_NAMES``."""
    if capability < (7, 0):
        return False
    return not any(marker in name for marker in NO_TENSOR_CORE_NAMES)


def precision_for_card(capability: tuple[int, int], name: str, amp: bool,
                       amp_dtype: str = "auto") -> Precision:
    """The precision a CUDA run on this card trains in.

    Args:
        capability: the card's compute capability, e.g. (7, 5).
        name: the card's name as CUDA reports it, e.g. "NVIDIA GeForce GTX 1650".
        amp: the config's ``amp`` switch.
        amp_dtype: "auto" (this module's table), "float16" or "bfloat16" (forced).

    Raises:
        ValueError: ``amp_dtype`` is not one of the three names.
    """
    if amp_dtype not in AMP_DTYPES:
        raise ValueError(f"amp_dtype: '{amp_dtype}' is not one of {', '.join(AMP_DTYPES)}")
    if not amp:
        return FLOAT32
    if amp_dtype == "bfloat16":
        return BFLOAT16
    if amp_dtype == "float16":
        return FLOAT16
    sm = f"compute capability {capability[0]}.{capability[1]}"
    if capability >= (8, 0):
        return Precision(True, torch.bfloat16, False,
                         f"{name} ({sm}) computes bfloat16 in hardware; no loss scaling needed")
    if has_tensor_cores(capability, name):
        return Precision(True, torch.float16, True,
                         f"{name} ({sm}) has tensor cores for float16 but no bfloat16")
    return Precision(False, torch.float32, False,
                     f"{name} ({sm}) has no tensor cores, where float16 autocast runs slower "
                     "than float32, so amp is not used (set amp_dtype float16 to force it)")


def resolve_precision(amp: bool, amp_dtype: str, device: str,
                      card: CardInfo | None = None) -> Precision:
    """The precision of a run with config ``amp``/``amp_dtype`` on ``device``.

    Args:
        amp: the config's ``amp`` switch.
        amp_dtype: "auto", "float16" or "bfloat16".
        device: a resolved device name ("cpu", "cuda:0", ...); only CUDA gets mixed precision.
        card: the CUDA card; read from ``device`` when None.

    Raises:
        ValueError: ``amp_dtype`` is not one of the three names.
    """
    if amp_dtype not in AMP_DTYPES:
        raise ValueError(f"amp_dtype: '{amp_dtype}' is not one of {', '.join(AMP_DTYPES)}")
    if not amp or not device.startswith("cuda"):
        return FLOAT32
    card = card or CardInfo.of_device(device)
    return precision_for_card(card.capability, card.name, amp, amp_dtype)


def precision_message(precision: Precision, amp: bool, amp_dtype: str) -> str | None:
    """The run log's line about the precision chosen; None when amp is off (nothing to say)."""
    if not amp:
        return None
    if not precision.autocast:
        if precision.reason:
            return f"Training in float32: {precision.reason}."
        return "Mixed precision (amp) is a CUDA feature; this CPU run uses float32."
    why = f": {precision.reason}" if precision.reason else ""
    return f"Training in {precision.label} precision (amp_dtype {amp_dtype}){why}."
