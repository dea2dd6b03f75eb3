"""Datasets and loaders that keep a GPU fed: uint8 crops from cached, draft-decoded images.

Each sample is decoded once (resized, then cached on disk), cropped by the transforms as
uint8 and batched; ``BatchPreparer`` finishes the job on the device. An image that cannot be
decoded becomes a zero image labelled -1 (ignored by loss and accuracy) and a line in the
failure log, instead of ending a night's run (see ``decode_failures``).
"""

from __future__ import annotations

import os
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset, WeightedRandomSampler

from workbench.core.data.cache_folder import default_cache_dir
from workbench.core.data.dataset_scan import DatasetScan
from workbench.core.data.decode_failures import append_failure, append_warning
from workbench.core.data.image_cache import ImageDecodeError, decode_file, load_image_uint8
from workbench.core.data.multicrop import IGNORE_LABEL
from workbench.core.data.transforms import (
    ImageTransform,
    build_eval_transform,
    build_train_transform,
    normalization_for,
    train_source_size,
)

# Batches each loader process prepares ahead; small batches (e.g. 4 photos) need more.
PREFETCH_FACTOR = 4

# A batch's images decode in parallel threads only when they are this large on average (files
# of photos): for small files (digits, thumbnails) handing them to threads costs more than it
# saves.
PARALLEL_DECODE_MIN_BYTES = 32 * 1024

# Resized images kept in memory across epochs, shared out among the loader processes: a small
# dataset (digits) then skips reading and parsing its cache files every epoch.
MEMORY_CACHE_BYTES = 512 * 2**20


class ImageSampleDataset(Dataset):
    """``(path, label)`` samples -> ``(uint8 tensor after transform, label)``.

    Args:
        samples: image paths with their class index.
        transform: uint8 ``[C,H,W]`` -> uint8 crop(s), from ``workbench.core.data.transforms``.
        resize_size: shorter side after the resize that precedes the transform.
        grayscale: one channel instead of RGB.
        cache_dir: folder of resized images to reuse, or None to decode every time; when
            given, images are also kept in this process's memory up to its share of
            ``MEMORY_CACHE_BYTES``.
        failure_log: text file to which ``"<path>\\t<reason>"`` lines are appended for
            images that cannot be decoded (shared safely by loader processes).
        upscale: False leaves images smaller than ``resize_size`` at their own size (the
            random resized crop's source, see ``train_source_size``).
        interpolation: the resize's, 'bilinear' or 'bicubic' (the config's ``interpolation``).
    """

    def __init__(
        self,
        samples: list[tuple[str, int]],
        transform: ImageTransform,
        resize_size: int,
        grayscale: bool,
        cache_dir: str | None,
        failure_log: str | None = None,
        upscale: bool = True,
        interpolation: str = "bilinear",
    ) -> None:
        self.samples = list(samples)
        self.upscale = upscale
        self.interpolation = interpolation
        self.transform = transform
        self.resize_size = resize_size
        self.grayscale = grayscale
        self.cache_dir = cache_dir
        # New cache files written by a background thread (the images decoded once, in this
        # process, while the run waits: ``device_images``); by the loader processes at once.
        self.cache_in_background = False
        self.failure_log = failure_log
        self._placeholder_shape: torch.Size | None = None
        self._in_memory: dict[int, torch.Tensor] = {}
        self._in_memory_bytes = 0
        self._pool: ThreadPoolExecutor | None = None
        self._pool_owner = (0, 0)  # (process id, threads) the pool was started for

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        image, label = self._load(index)
        if image is None:
            return self._placeholder(), IGNORE_LABEL
        return self.transform(image), label

    def __getitems__(self, indices: list[int]) -> list[tuple[torch.Tensor, int]]:
        """One batch's samples (the DataLoader asks for whole batches through this).

        Images not yet in memory are decoded in parallel threads (``decode_threads``): Pillow
        lets go of the interpreter while it decodes, so a first epoch of large JPEGs goes about
        as many times faster as there are idle cores. A transform with a ``batch`` method (the
        random resized crop) crops the batch in one go when every image decoded to the same
        size: the same pixels for far less work.
        """
        loaded = self._load_batch(indices)
        crop_batch = getattr(self.transform, "batch", None)
        images = [image for image, _ in loaded if image is not None]
        if crop_batch is not None and len(images) == len(loaded) \
                and all(image.shape == images[0].shape for image in images):
            crops = crop_batch(torch.stack(images))
            return [(crop, label) for crop, (_, label) in zip(crops, loaded, strict=True)]
        return [(self.transform(image), label) if image is not None
                else (self._placeholder(), IGNORE_LABEL) for image, label in loaded]

    def _load_batch(self, indices: list[int]) -> list[tuple[torch.Tensor | None, int]]:
        """``_load`` of each index, decoding the images not in memory in parallel threads."""
        missing = [index for index in dict.fromkeys(indices) if index not in self._in_memory]
        threads = min(len(missing), decode_threads())
        if threads < 2 or self._mean_file_bytes(missing) < PARALLEL_DECODE_MIN_BYTES:
            return [self._load(index) for index in indices]
        pool = self._decode_pool(threads)
        # One record for the batch: warnings.catch_warnings is process-wide, not per thread.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            decoded = dict(zip(missing, pool.map(self._decode, missing), strict=True))
        for index, (image, reason) in decoded.items():
            if image is None:
                self._log_failure(self.samples[index][0], reason)
            else:
                self._keep_in_memory(index, image)
        if caught and self.failure_log:
            self._log_warnings_of([index for index, (image, _) in decoded.items()
                                   if image is not None])
        return [(decoded[index][0] if index in decoded else self._in_memory[index],
                 self.samples[index][1]) for index in indices]

    def _mean_file_bytes(self, indices: list[int]) -> float:
        total = 0
        for index in indices:
            try:
                total += os.stat(self.samples[index][0]).st_size
            except OSError:
                pass  # its decode says why
        return total / max(1, len(indices))

    def _decode_pool(self, threads: int) -> ThreadPoolExecutor:
        """This process's decoding threads, started once: a loader process forked from this
        one inherits the pool object but none of its threads, so it starts its own."""
        if self._pool is None or self._pool_owner != (os.getpid(), threads):
            self._pool = ThreadPoolExecutor(threads, thread_name_prefix="workbench-decode")
            self._pool_owner = (os.getpid(), threads)
        return self._pool

    def __getstate__(self) -> dict[str, Any]:
        """For loader processes started by spawning: the pool stays behind."""
        state = self.__dict__.copy()
        state["_pool"] = None
        return state

    def _decode(self, index: int) -> tuple[torch.Tensor | None, str]:
        """(image, '') or (None, the reason it cannot be decoded); a pool thread may call it."""
        try:
            return load_image_uint8(self.samples[index][0], self.resize_size, self.grayscale,
                                    self.cache_dir, self.upscale, self.interpolation,
                                    self.cache_in_background), ""
        except ImageDecodeError as exc:
            return None, exc.reason

    def _log_warnings_of(self, indices: list[int]) -> None:
        """Some image of a parallel batch warned: decode each again on its own (not from the
        cache, which the first decode filled) to log the warnings beside the right file."""
        for index in indices:
            path = self.samples[index][0]
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    decode_file(path, self.resize_size, self.grayscale, self.upscale,
                                self.interpolation)
                except ImageDecodeError:
                    continue
            if caught:
                append_warning(self.failure_log, path,
                               "; ".join(sorted({str(w.message) for w in caught})))

    def _load(self, index: int) -> tuple[torch.Tensor | None, int]:
        """The resized image and label of sample ``index``; None for an image that failed
        (logged)."""
        path, label = self.samples[index]
        image = self._in_memory.get(index)
        if image is None:
            # Pillow's warnings (odd EXIF, truncated data it could read past) belong in the
            # run's log beside the failures, not between the progress lines of a terminal.
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                image, reason = self._decode(index)
            if image is None:
                self._log_failure(path, reason)
                return None, label
            if caught and self.failure_log:
                append_warning(self.failure_log, path,
                               "; ".join(sorted({str(w.message) for w in caught})))
            self._keep_in_memory(index, image)
        return image, label

    def _placeholder(self) -> torch.Tensor:
        return torch.zeros(self.placeholder_shape(), dtype=torch.uint8)

    def _keep_in_memory(self, index: int, image: torch.Tensor) -> None:
        if self.cache_dir is None:
            return  # caching is off: every epoch decodes afresh, as asked
        worker = torch.utils.data.get_worker_info()
        budget = MEMORY_CACHE_BYTES // (worker.num_workers if worker is not None else 1)
        size = image.numel() * image.element_size()
        if self._in_memory_bytes + size <= budget:
            self._in_memory[index] = image
            self._in_memory_bytes += size

    def placeholder_shape(self) -> torch.Size:
        """Shape of a transformed sample, for the zero image that stands in for a broken one."""
        if self._placeholder_shape is None:
            channels = 1 if self.grayscale else 3
            square = torch.zeros((channels, self.resize_size, self.resize_size), dtype=torch.uint8)
            self._placeholder_shape = self.transform(square).shape
        return self._placeholder_shape

    def _log_failure(self, path: str, reason: str) -> None:
        if self.failure_log:
            append_failure(self.failure_log, path, reason)


def decode_threads() -> int:
    """Threads that decode one batch's images: the cores this process may use, shared out
    among the loader processes (each of those runs its own batches)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cores = os.cpu_count() or 1
    worker = torch.utils.data.get_worker_info()
    return max(1, cores // (worker.num_workers if worker is not None else 1))


@dataclass
class DataPipeline:
    """Both loaders and what the training loop needs to know about their batches."""

    train_loader: DataLoader
    val_loader: DataLoader
    crops_per_sample: int
    mean: tuple[float, ...]
    std: tuple[float, ...]
    class_weights: torch.Tensor | None
    sampler: str
    failure_log: str | None


def build_data_pipeline(
    config: Any, scan: DatasetScan, device: str, failure_log: str | None = None
) -> DataPipeline:
    """Train and val loaders for ``scan`` as ``config`` asks.

    Args:
        config: a ``TrainConfig``.
        scan: the dataset's samples and classes.
        device: where batches will go; pinned memory is used only for CUDA.
        failure_log: file that collects images that cannot be decoded.
    """
    grayscale = config.in_channels == 1
    cache_dir = image_cache_dir(config)
    train_size, train_upscale = train_source_size(config)
    train_set = ImageSampleDataset(scan.train, build_train_transform(config), train_size,
                                   grayscale, cache_dir, failure_log, train_upscale,
                                   config.interpolation)
    val_set = ImageSampleDataset(scan.val, build_eval_transform(config),
                                 config.resize_size, grayscale, cache_dir, failure_log,
                                 interpolation=config.interpolation)
    generator = torch.Generator().manual_seed(config.seed)
    class_weights = None
    sampler = None
    sampler_name = "shuffle"
    if config.imbalance == "weighted_loss":
        class_weights = inverse_frequency_weights(scan.train_counts())
    elif config.imbalance == "weighted_sampler":
        sampler = _weighted_sampler(scan, generator)
        sampler_name = "weighted_sampler"
    options = _loader_options(config, device)
    train_loader = DataLoader(train_set, sampler=sampler, shuffle=sampler is None,
                              generator=generator, **options)
    val_loader = DataLoader(val_set, shuffle=False, **options)
    mean, std = normalization_for(config)
    return DataPipeline(train_loader, val_loader, config.crops_per_sample, mean, std,
                        class_weights, sampler_name, failure_log)


def image_cache_dir(config: Any) -> str | None:
    """Where ``config``'s run caches resized images; None when ``cache_images`` is off."""
    if not config.cache_images:
        return None
    return config.cache_dir or str(default_cache_dir())


def loader_like(
    loader: DataLoader, sampler: Any = None, persistent_workers: bool | None = None
) -> DataLoader:
    """A loader over the same dataset with the same batch and worker settings as ``loader``,
    reading in ``sampler``'s order (file order when None)."""
    workers = loader.num_workers
    return DataLoader(
        loader.dataset,
        batch_size=loader.batch_size,
        sampler=sampler,
        shuffle=False,
        num_workers=workers,
        pin_memory=loader.pin_memory,
        persistent_workers=workers > 0 if persistent_workers is None else persistent_workers,
        prefetch_factor=loader.prefetch_factor if workers > 0 else None,
        timeout=loader.timeout if workers > 0 else 0.0,
    )


def inverse_frequency_weights(counts: list[int]) -> torch.Tensor:
    """Class weights proportional to 1/count, scaled to a mean of 1 (float32)."""
    inverse = torch.tensor([1.0 / max(c, 1) for c in counts], dtype=torch.float32)
    return inverse / inverse.mean()


def _weighted_sampler(scan: DatasetScan, generator: torch.Generator) -> WeightedRandomSampler:
    """Draws every class equally often on average, reproducibly."""
    counts = scan.train_counts()
    weights = torch.tensor([1.0 / counts[label] for _, label in scan.train], dtype=torch.double)
    return WeightedRandomSampler(weights, num_samples=len(scan.train), replacement=True,
                                 generator=generator)


def pins_memory(config: Any, device: str) -> bool:
    """Whether the loader pins its batches: asked for, and on CUDA (pinned pages only speed
    up copies to a GPU)."""
    return bool(config.pin_memory) and torch.device(device).type == "cuda"


def _loader_options(config: Any, device: str) -> dict[str, Any]:
    workers = config.workers
    return {
        "batch_size": config.batch_size,
        "num_workers": workers,
        "persistent_workers": workers > 0,
        "pin_memory": pins_memory(config, device),
        "prefetch_factor": PREFETCH_FACTOR if workers > 0 else None,
        "drop_last": False,
        # A worker that hangs (a stuck network file, a stopped process) ends the run with a
        # message instead of blocking it forever; a dead worker is noticed without it.
        "timeout": float(config.loader_timeout) if workers > 0 else 0.0,
    }
