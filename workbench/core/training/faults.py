"""Faults a run meets that are not bad input: the device running out of memory, and a loader
process that died or hung. Each becomes an exception carrying words a user can act on; the
engine turns them into a failed ``RunEnd`` and keeps the application up. (A full or read-only
disk is described by :func:`workbench.core.runs.atomic_io.describe_os_error`.)
"""

from __future__ import annotations

# The two messages torch's DataLoader gives when a worker process dies or stops answering.
_LOADER_FAILURES = ("DataLoader worker", "DataLoader timed out")


class TrainingOutOfMemory(Exception):
    """The device ran out of memory in a training step; the step's memory is already freed.

    Attributes:
        batch_size: The batch (in samples) that did not fit.
        device: The device name.
    """

    def __init__(self, batch_size: int, device: str, detail: str) -> None:
        self.batch_size = batch_size
        self.device = device
        self.detail = detail
        super().__init__(out_of_memory_message(batch_size, device, detail))

    @property
    def smaller_batch(self) -> int:
        """Half the batch, at least 1; 0 when the batch was already 1."""
        return self.batch_size // 2 if self.batch_size > 1 else 0


def out_of_memory_message(batch_size: int, device: str, detail: str) -> str:
    """What happened and the concrete next step: half the batch, or smaller images at batch 1."""
    where = f"the GPU ({device})" if device.startswith("cuda") else f"the device ({device})"
    text = f"{where} ran out of memory at batch size {batch_size}"
    if detail:
        text += f" ({detail})"
    if batch_size > 1:
        return (f"{text}; try batch size {batch_size // 2} (half), or turn on "
                "'retry with a smaller batch' (oom_retry_smaller_batch) to let the run do it; "
                "amp or a smaller crop_size also saves memory")
    return f"{text}; even one image does not fit: lower crop_size or resize_size, or turn on amp"


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (CUDA's OOM text runs to several lines)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def loader_failure_message(exc: BaseException, workers: int, timeout_s: float) -> str | None:
    """Words for a DataLoader whose worker process died or hung; None for any other error."""
    if not isinstance(exc, RuntimeError):
        return None
    text = str(exc)
    if not any(marker in text for marker in _LOADER_FAILURES):
        return None
    if "timed out" in text:
        what = f"a data loader process sent no batch for {timeout_s:g} s (loader_timeout)"
    else:
        what = f"a data loader process died ({first_line(exc)})"
    return (f"{what}; this usually means the {workers} loader process(es) ran out of memory or "
            "got stuck on a file. Try fewer workers (or workers 0, which loads in the training "
            "process), or raise loader_timeout for very slow storage")
