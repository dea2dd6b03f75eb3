"""What an exported file costs, measured on this machine in the runtime it is for.

Every export is run over the run's own validation images (as uint8 crops, the exports' input)
and compared with the float32 model it came from: file size, top-1 agreement with the float32
model, validation accuracy, batch-1 latency (median and 95th percentile of repeated runs after
warm-up) and images/s at a batch of 32 images. TorchScript runs in LibTorch through
``torch.jit``, ONNX in onnxruntime on the CPU.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from workbench.core.data.dataset_scan import DatasetError
from workbench.core.data.image_cache import ImageDecodeError
from workbench.core.data.training_scan import scan_for_run
from workbench.core.models.prediction import image_crops

Runner = Callable[[np.ndarray], np.ndarray]
"""uint8 crops ``[M, C, H, W]`` -> float32 logits ``[M, classes]``."""

LATENCY_WARMUP = 5
LATENCY_REPEATS = 30
THROUGHPUT_BATCH = 32
THROUGHPUT_REPEATS = 5
_CHUNK = 32


@dataclass(frozen=True)
class EvaluationImages:
    """Images of one split, decoded a chunk at a time as an export takes them (uint8 crops):
    a validation split of thousands of five-crop images would not fit in memory at once.

    Attributes:
        samples: (path, class index) of each image, in order.
        preprocessing: the export's resize and crop settings (``image_crops``).
        description: where they come from, in words.
    """

    samples: tuple[tuple[str, int], ...]
    preprocessing: dict
    description: str

    def chunks(self, size: int) -> Iterator[tuple[np.ndarray, np.ndarray, int]]:
        """(crops ``[images * k, C, H, W]``, labels, k) of ``size`` images at a time; images
        that cannot be decoded are left out."""
        for start in range(0, len(self.samples), size):
            crops, labels = [], []
            for path, label in self.samples[start:start + size]:
                try:
                    crops.append(image_crops(path, self.preprocessing).numpy())
                except ImageDecodeError:
                    continue
                labels.append(label)
            if crops:
                yield np.concatenate(crops), np.asarray(labels), crops[0].shape[0]

    def all_crops(self) -> np.ndarray:
        """Every image's crops at once (for small sets: the calibration sample)."""
        return np.concatenate([crops for crops, _, _ in self.chunks(_CHUNK)])


class EvaluationUnavailable(Exception):
    """The run's images cannot be read, so accuracy cannot be measured; says why."""


def evaluation_images(data_root: str, class_names: Sequence[str], preprocessing: dict,
                      split: str = "val", val_fraction: float = 0.2, seed: int = 0,
                      limit: int | None = None, *, cache_dir: str = "",
                      exclude_file: str = "") -> EvaluationImages:
    """The ``split`` ('val' or 'train') of the run's folder, to be cut as the export expects.

    The folder is scanned and split as the run's own scan did it (``scan_for_run`` with the same
    ``val_fraction``, ``seed``, health-check copy groups in ``cache_dir`` and exclusion list), so
    an export is measured on the images its run validated on. ``limit`` takes that many images
    spread over the split.

    Raises:
        EvaluationUnavailable: the folder is gone, holds other classes, or is empty.
    """
    try:
        scan = scan_for_run(data_root, val_fraction, seed, cache_dir=cache_dir,
                            exclude_file=exclude_file)
    except (DatasetError, OSError) as exc:
        raise EvaluationUnavailable(f"the run's images cannot be read ({exc})") from exc
    if list(scan.class_names) != list(class_names):
        raise EvaluationUnavailable(
            f"{data_root} now holds classes {list(scan.class_names)}, the model was trained on "
            f"{list(class_names)}")
    samples = list(scan.val if split == "val" else scan.train)
    if limit is not None and len(samples) > limit:
        samples = [samples[int(i * len(samples) / limit)] for i in range(limit)]
    if not samples:
        raise EvaluationUnavailable(f"{data_root} has no {split} images")
    where = "validation" if split == "val" else "training"
    return EvaluationImages(tuple(samples), preprocessing,
                            f"{len(samples)} {where} images of {data_root}")


def image_logits(runners: Sequence[Runner], images: EvaluationImages
                 ) -> tuple[list[np.ndarray], np.ndarray]:
    """Each runner's logits of every decodable image (its crops' logits averaged), float32
    ``[n, classes]``, and the images' labels. Each chunk is decoded once for all runners.

    Raises:
        EvaluationUnavailable: no image could be decoded.
    """
    rows: list[list[np.ndarray]] = [[] for _ in runners]
    labels = []
    for crops, chunk_labels, k in images.chunks(_CHUNK):
        for row, runner in zip(rows, runners, strict=True):
            logits = np.asarray(runner(crops), dtype=np.float32)
            row.append(logits.reshape(len(chunk_labels), k, -1).mean(axis=1))
        labels.append(chunk_labels)
    if not labels:
        raise EvaluationUnavailable(f"no image of the {images.description} could be decoded")
    return [np.concatenate(row) for row in rows], np.concatenate(labels)


@dataclass(frozen=True)
class ExportFigures:
    """One exported file as measured here; accuracy figures are None where not measured."""

    export_format: str
    path: str
    runtime: str
    size_bytes: int
    float32_size_bytes: int | None
    images: int
    top1_agreement: float | None
    val_accuracy: float | None
    float32_val_accuracy: float | None
    max_abs_logit_diff: float | None
    latency_ms_median: float
    latency_ms_p95: float
    images_per_second: float
    verified: bool
    verdict: str

    def to_dict(self) -> dict:
        return asdict(self)

    def summary(self) -> str:
        """One line of figures: size, accuracy against float32 and speed (the verdict is
        ``verdict``, said first by whoever shows it)."""
        size = f"{self.size_bytes / 2**20:.2f} MiB"
        if self.float32_size_bytes:
            size += f" ({self.float32_size_bytes / self.size_bytes:.1f}x smaller than float32)" \
                if self.size_bytes < self.float32_size_bytes else ""
        accuracy = ("accuracy not measured" if self.val_accuracy is None else
                    f"val accuracy {self.val_accuracy:.3f} (float32 "
                    f"{self.float32_val_accuracy:.3f}), top-1 agreement "
                    f"{self.top1_agreement:.1%} on {self.images} images")
        return (f"{self.export_format}: {size}; {accuracy}; batch-1 latency "
                f"{self.latency_ms_median:.2f} ms (p95 {self.latency_ms_p95:.2f} ms), "
                f"{self.images_per_second:,.0f} images/s at batch {THROUGHPUT_BATCH} in "
                f"{self.runtime}")


@dataclass(frozen=True)
class Speed:
    latency_ms_median: float
    latency_ms_p95: float
    images_per_second: float


def measure_speed(runner: Runner, one_image: np.ndarray, batch: np.ndarray,
                  images_in_batch: int) -> Speed:
    """Batch-1 latency over ``LATENCY_REPEATS`` runs and images/s at ``images_in_batch``.

    Both shapes are warmed up before either is timed: TorchScript's executor profiles and
    re-optimises its graph during the first calls of each input shape.
    """
    for _ in range(LATENCY_WARMUP):
        runner(one_image)
        runner(batch)
    times = []
    for _ in range(LATENCY_REPEATS):
        started = time.perf_counter()
        runner(one_image)
        times.append(1000.0 * (time.perf_counter() - started))
    batch_times = []
    for _ in range(THROUGHPUT_REPEATS):
        started = time.perf_counter()
        runner(batch)
        batch_times.append(time.perf_counter() - started)
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]
    return Speed(statistics.median(times), p95,
                 images_in_batch / max(statistics.median(batch_times), 1e-9))


def speed_inputs(images: EvaluationImages | None, example: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, int]:
    """(one image's crops, a batch of up to 32 images' crops, its image count)."""
    first = None if images is None else next(images.chunks(THROUGHPUT_BATCH), None)
    if first is None:
        one = example[:1]
        return one, np.repeat(one, THROUGHPUT_BATCH, axis=0), THROUGHPUT_BATCH
    crops, labels, k = first
    return crops[:k], crops, len(labels)


def torchscript_runner(path: str | Path) -> Runner:
    """Runs a TorchScript export through LibTorch (``torch.jit``) on the CPU."""
    from workbench.core.models.export import load_exported

    module = load_exported(path).module

    def run(crops: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            return module(torch.from_numpy(crops)).numpy()

    return run


def onnx_runner(path: str | Path) -> Runner:
    """Runs an ONNX export in onnxruntime on the CPU."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3  # quantized graphs log every folded node otherwise
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name

    def run(crops: np.ndarray) -> np.ndarray:
        return session.run(None, {name: crops})[0]

    return run
