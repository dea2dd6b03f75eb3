"""What a health check found: plain data with a reason and the files involved."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Every kind of finding, in the order they are shown, with a title and why it matters.
KINDS: dict[str, tuple[str, str]] = {
    "unreadable": ("Unreadable images",
                   "Pillow cannot decode these files; training would fail or skip them."),
    "too_large": ("Images over the size limit",
                  "Refused before decoding, in training too: more pixels than the limit that "
                  "guards against decompression bombs. Shrink them or leave them out."),
    "leakage": ("Train/val leakage",
                "The same image is in train and in val: validation accuracy is inflated."),
    "conflicting_label": ("Conflicting labels",
                          "The same image is in two class folders: it teaches noise."),
    "exact_duplicate": ("Exact duplicates", "Files with the same pixels."),
    "near_duplicate": ("Near duplicates",
                       "Re-encoded, resized, slightly cropped or brightness-shifted copies."),
    "near_blank": ("Near-blank images", "Almost one colour: little for a model to learn."),
    "dark": ("Very dark images", "Mostly black; often a failed exposure."),
    "bright": ("Very bright images", "Mostly white; often overexposed."),
    "blurry": ("Blurry images", "Little fine detail left."),
    "tiny": ("Tiny images", "Upscaled to the training size they carry little detail."),
    "extreme_aspect": ("Extreme aspect ratio", "Cropping keeps only a small part of them."),
    "grayscale": ("Grayscale among colour", "Few grey images in a colour dataset."),
    "imbalance": ("Class balance", "How the training images are spread over the classes."),
    # After training, from the trained model's penultimate features (model_features.py).
    "model_near_duplicate": ("Near duplicates (model)",
                             "Validation images the trained model sees as the same, though "
                             "their pixels differ too much for the hash."),
    "model_outlier": ("Outliers (model)",
                      "Far from every other image of their class in the trained model's "
                      "eyes: a wrong folder, a blank frame or an unusual view."),
}


@dataclass(frozen=True)
class FindingItem:
    """One problem: the files involved, why, and which of them leaving out would remove it."""

    files: tuple[str, ...]
    reason: str
    leave_out: tuple[str, ...] = ()


@dataclass(frozen=True)
class Finding:
    """All problems of one kind."""

    kind: str
    items: tuple[FindingItem, ...]
    verdict: str = ""  # a plain one-line judgement where a count says little (class balance)

    @property
    def title(self) -> str:
        return KINDS[self.kind][0]

    @property
    def explanation(self) -> str:
        return KINDS[self.kind][1]

    @property
    def count(self) -> int:
        return len(self.items)

    def leave_out(self) -> list[str]:
        """The files to leave out of training to remove every problem of this finding."""
        return list(dict.fromkeys(path for item in self.items for path in item.leave_out))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "title": self.title, "explanation": self.explanation,
                "count": self.count, "verdict": self.verdict,
                "items": [{"files": list(i.files), "reason": i.reason,
                           "leave_out": list(i.leave_out)} for i in self.items]}


@dataclass
class HealthReport:
    """The outcome of one health check of ``root``."""

    root: str
    layout: str
    images: int
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0
    reused: int = 0  # images whose facts came from the cache of an earlier check
    near_threshold: int = 0
    report_path: str = ""

    def finding(self, kind: str) -> Finding | None:
        """The finding of ``kind``, or None when the check found no such problem."""
        return next((f for f in self.findings if f.kind == kind), None)

    def problem_findings(self) -> list[Finding]:
        """Findings with files to show (every one but the class-balance verdict)."""
        return [f for f in self.findings if f.items]

    def to_dict(self) -> dict[str, Any]:
        return {"root": self.root, "layout": self.layout, "images": self.images,
                "seconds": round(self.seconds, 3), "reused": self.reused,
                "near_duplicate_threshold_bits": self.near_threshold,
                "findings": [f.to_dict() for f in self.findings]}


def report_from_dict(data: dict[str, Any]) -> HealthReport:
    """The report ``HealthReport.to_dict`` wrote (a ``health.json`` read back)."""
    findings = [
        Finding(f["kind"], tuple(FindingItem(tuple(i["files"]), i["reason"],
                                             tuple(i["leave_out"])) for i in f["items"]),
                f.get("verdict", ""))
        for f in data["findings"] if f["kind"] in KINDS]
    return HealthReport(data["root"], data["layout"], data["images"], findings,
                        data.get("seconds", 0.0), data.get("reused", 0),
                        data.get("near_duplicate_threshold_bits", 0))


def write_report(report: HealthReport, path: str | os.PathLike[str]) -> Path:
    """Write ``report`` as JSON at ``path`` (atomically); never inside the checked folder."""
    from workbench.core.runs.atomic_io import atomic_write_bytes

    target = Path(path).absolute()
    refuse_inside(target, report.root)
    # Atomic, not fsynced: the report is rebuilt from the cached facts in a fraction of a second.
    atomic_write_bytes(target, (json.dumps(report.to_dict(), indent=1) + "\n").encode(),
                       durable=False)
    report.report_path = str(target)
    return target


def refuse_inside(target: Path, root: str) -> None:
    """Raise ValueError when ``target`` lies inside the user's folder ``root``: the check
    only ever reads that folder."""
    root_path = Path(root).resolve()
    resolved = target.resolve()
    if resolved == root_path or root_path in resolved.parents:
        raise ValueError(f"{target}: inside the image folder {root}; the health check writes "
                         "nothing there (choose the cache or output folder)")
