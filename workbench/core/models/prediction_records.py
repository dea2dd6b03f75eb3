"""Collect an evaluation pass's per-image predictions, for the best epoch's predictions.csv.

``evaluate_batches`` hands every batch's logits to a ``PredictionCollector``; validation
batches come in the validation samples' order (the loader does not shuffle, cached features
and images on the device keep that order too), so the n-th collected row is the n-th
validation image. Several crops of an image make one row, as they make one prediction.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from workbench.core.data.health.model_features import feature_findings, write_feature_findings
from workbench.core.data.multicrop import IGNORE_LABEL, sample_logits_of
from workbench.core.runs.predictions_file import PredictionRow, write_predictions

TOP_CLASSES = 5


class PredictionCollector:
    """Keeps probabilities and losses of every image of one evaluation pass (on the CPU).

    Args:
        crops: crops per image (1, 5 or 10).
        strategy: "repeat_labels" (an image's loss is the mean of its crops' losses) or
            "average_logits" (the loss of the averaged logits), as in training.
    """

    def __init__(self, crops: int, strategy: str) -> None:
        self.crops = crops
        self.strategy = strategy
        self._probabilities: list[torch.Tensor] = []
        self._losses: list[torch.Tensor] = []
        self._labels: list[torch.Tensor] = []
        self._features: list[torch.Tensor] = []
        self._head_input: torch.Tensor | None = None

    def watch_head(self, head: nn.Module) -> Any:
        """Keep what ``head`` receives (the penultimate features) with each batch's
        predictions, averaged over an image's crops like its logits. Returns the hook's
        handle; ``remove()`` it after the pass."""
        def keep(_module: nn.Module, args: tuple[Any, ...]) -> None:
            self._head_input = args[0].detach()

        return head.register_forward_pre_hook(keep)

    def __len__(self) -> int:
        return sum(len(labels) for labels in self._labels)

    def add(self, logits: torch.Tensor, labels: torch.Tensor) -> None:
        """One batch: ``[B*K,N]`` logits of flattened crops and ``[B]`` labels (-1: ignored)."""
        logits = logits.detach().float()
        batch = labels.shape[0]
        sample_logits = sample_logits_of(logits, batch, self.crops)
        targets = labels.clamp(min=0).to(logits.device)
        if self.strategy == "repeat_labels" and self.crops > 1:
            per_crop = F.cross_entropy(logits, targets.repeat_interleave(self.crops),
                                       reduction="none")
            losses = per_crop.view(batch, self.crops).mean(dim=1)
        else:
            losses = F.cross_entropy(sample_logits, targets, reduction="none")
        if self._head_input is not None and self._head_input.shape[0] == logits.shape[0]:
            inputs = self._head_input.float().flatten(1)
            self._features.append(sample_logits_of(inputs, batch, self.crops).cpu())
        self._head_input = None
        self._probabilities.append(sample_logits.softmax(dim=1).cpu())
        self._losses.append(losses.cpu())
        self._labels.append(labels.detach().cpu())

    def rows(self, samples: Sequence[tuple[str, int]], class_names: Sequence[str],
             top_classes: int = TOP_CLASSES) -> list[PredictionRow]:
        """One row per collected image that decoded (label not -1), paired with ``samples``.

        Raises:
            ValueError: fewer or more images were collected than ``samples`` holds.
        """
        if len(self) != len(samples):
            raise ValueError(f"collected {len(self)} predictions for {len(samples)} images")
        if not samples:
            return []
        probabilities = torch.cat(self._probabilities)
        losses = torch.cat(self._losses)
        labels = torch.cat(self._labels)
        k = min(top_classes, probabilities.shape[1])
        top_p, top_i = probabilities.topk(k, dim=1)
        rows = []
        for index, (path, label) in enumerate(samples):
            if int(labels[index]) == IGNORE_LABEL:
                continue  # an image that could not be decoded has no prediction
            top = tuple((class_names[int(c)], float(p))
                        for c, p in zip(top_i[index], top_p[index], strict=True))
            rows.append(PredictionRow(
                path=path, true_class=class_names[label], predicted_class=top[0][0],
                confidence=top[0][1], true_class_probability=float(probabilities[index, label]),
                loss=float(losses[index]), top=top,
            ))
        return rows

    def decoded_rows(self) -> list[int]:
        """Positions of the collected images that decoded (label not -1)."""
        if not self._labels:
            return []
        return torch.nonzero(torch.cat(self._labels) != IGNORE_LABEL).flatten().tolist()

    def accuracy(self) -> float | None:
        """The share of decoded images whose most probable class is their label (None when
        none was collected)."""
        if not self._labels:
            return None
        labels = torch.cat(self._labels)
        kept = labels != IGNORE_LABEL
        if not bool(kept.any()):
            return None
        predicted = torch.cat(self._probabilities).argmax(dim=1)
        return float((predicted[kept] == labels[kept]).float().mean())

    def features(self) -> torch.Tensor | None:
        """``[N, D]`` penultimate features of every collected image (``watch_head``), in
        collection order; None when they were not kept for every batch."""
        if not self._features or sum(len(f) for f in self._features) != len(self):
            return None
        return torch.cat(self._features)

    def write(self, run_dir: Path | str, samples: Sequence[tuple[str, int]],
              class_names: Sequence[str]) -> Path:
        """Write the rows to ``run_dir``/predictions.csv atomically; returns its path."""
        return write_predictions(run_dir, self.rows(samples, class_names))


def write_best_predictions(collector: PredictionCollector | None, run_dir: Path | str,
                           samples: Sequence[tuple[str, int]], class_names: Sequence[str],
                           root: str = "") -> str | None:
    """Write the best epoch's predictions.csv, and feature_health.json from the features
    collected with them (images of ``root``); returns what went wrong, or None.

    A failed write is a warning, not the end of the run: the model files matter more, and
    their own save reports a full disk.
    """
    if collector is None:
        return "no predictions were collected, so predictions.csv was not written"
    problems = []
    try:
        collector.write(run_dir, samples, class_names)
    except (OSError, ValueError) as exc:
        problems.append(f"{Path(run_dir) / 'predictions.csv'} could not be written: {exc}")
    # The feature findings do not need predictions.csv: one failed write loses one file.
    problems.append(write_best_feature_findings(collector, run_dir, samples, class_names, root))
    return "; ".join(p for p in problems if p) or None


def write_best_feature_findings(collector: PredictionCollector, run_dir: Path | str,
                                samples: Sequence[tuple[str, int]],
                                class_names: Sequence[str], root: str) -> str | None:
    """Near duplicates and outliers by the best epoch's features, beside its predictions;
    returns what went wrong, or None (also when no features were kept)."""
    features = collector.features()
    if features is None:
        return None
    decoded = collector.decoded_rows()
    try:
        report = feature_findings([samples[i][0] for i in decoded],
                                  [samples[i][1] for i in decoded], class_names,
                                  features[decoded].numpy(), root,
                                  accuracy=collector.accuracy())
        write_feature_findings(report, run_dir)
    except (OSError, ValueError) as exc:
        return f"the model's feature findings could not be written to {run_dir}: {exc}"
    return None
