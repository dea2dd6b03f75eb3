"""Stop a run once the validation loss or accuracy has not improved for ``patience`` epochs.

As Lightning's ``EarlyStopping`` and Keras's callback: the best value so far and the epochs
since it are kept; an epoch improves when it beats the best by more than ``min_delta``. The
best model is already on disk (``best_model.pt``), so stopping keeps it. The state goes into
every checkpoint (:meth:`EarlyStopping.state_dict`), so a resumed run stops at the epoch an
uninterrupted one would.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from workbench.core.runs.config import TrainConfig


class EarlyStopping:
    """Watches one validation figure, epoch by epoch.

    Args:
        monitor: "val_loss" (lower is better) or "val_accuracy" (higher is better).
        patience: epochs without improvement after which ``update`` says stop.
        min_delta: the least change that counts as an improvement.
    """

    def __init__(self, monitor: str, patience: int, min_delta: float = 0.0) -> None:
        if monitor not in ("val_loss", "val_accuracy"):
            raise ValueError(f"early_stopping: '{monitor}' is not val_loss or val_accuracy")
        if patience < 1:
            raise ValueError(f"early_stopping_patience: must be at least 1 (got {patience})")
        self.monitor = monitor
        self.patience = patience
        self.min_delta = min_delta
        self.best = math.inf if monitor == "val_loss" else -math.inf
        self.best_epoch = 0
        self.epochs_without_improvement = 0

    def update(self, epoch: int, val_loss: float, val_accuracy: float) -> bool:
        """Record epoch ``epoch``'s figures; True when the run should stop now."""
        value = val_loss if self.monitor == "val_loss" else val_accuracy
        if math.isfinite(value) and self._improves(value):
            self.best, self.best_epoch = value, epoch
            self.epochs_without_improvement = 0
        else:
            self.epochs_without_improvement += 1
        return self.epochs_without_improvement >= self.patience

    def reason(self) -> str:
        """Why the run stopped, for its log."""
        name = "validation loss" if self.monitor == "val_loss" else "validation accuracy"
        return (f"Early stopping: the {name} has not improved for {self.patience} epoch(s) "
                f"(best {self.best:.4f} at epoch {self.best_epoch}).")

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint keeps: plain numbers and the monitor's name (weights_only-safe)."""
        return {"monitor": self.monitor, "best": float(self.best), "best_epoch": self.best_epoch,
                "epochs_without_improvement": self.epochs_without_improvement}

    def restore(self, state: Mapping[str, Any] | None) -> str:
        """Continue from a checkpoint's state; returns '' or why it was not used.

        A checkpoint without one (early stopping was off, or an older Workbench wrote it) or
        one that watched another figure leaves the patience counting from the resumed epoch.
        """
        if state is None:
            return ("the checkpoint holds no early-stopping state (early stopping was off, or "
                    "an older Workbench wrote it): its patience counts from the resumed epoch")
        if state.get("monitor") != self.monitor:
            return (f"the checkpoint's early stopping watched {state.get('monitor')}, this run "
                    f"watches {self.monitor}: its patience counts from the resumed epoch")
        self.best = float(state["best"])
        self.best_epoch = int(state["best_epoch"])
        self.epochs_without_improvement = int(state["epochs_without_improvement"])
        return ""

    def _improves(self, value: float) -> bool:
        if self.monitor == "val_loss":
            return value < self.best - self.min_delta
        return value > self.best + self.min_delta


def kept_result_message(best_epoch: int, val_accuracy: float, val_loss: float,
                        best_model_path: str) -> str:
    """Which epoch a run that ended before its last epoch leaves as its result, for its log.

    Args:
        val_loss: the best epoch's; NaN when not known (a checkpoint from an older Workbench).
    """
    if not best_epoch:
        return "No epoch was validated, so the run has no result to keep."
    loss = f", val loss {val_loss:.4f}" if math.isfinite(val_loss) else ""
    where = f": {best_model_path}" if best_model_path else ""
    return (f"Kept epoch {best_epoch} as the run's result (val accuracy "
            f"{100 * val_accuracy:.1f}%{loss}), the best model{where}.")


def early_stopping_for(config: TrainConfig) -> EarlyStopping | None:
    """The config's early stopping, or None when it is off."""
    if config.early_stopping == "off":
        return None
    return EarlyStopping(config.early_stopping, config.early_stopping_patience)
