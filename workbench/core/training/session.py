"""One run from prepared data to the last epoch: the state ``engine.train`` drives.

``prepare()`` decides the run's plan (:mod:`workbench.core.training.plan`: device, precision,
memory format, feature cache, images on the device) and builds what it says: data, model and
optimiser (or restores them from a checkpoint), the step context and the batch sources.
``fit()`` runs the epochs, keeps the best weights, checkpoints every epoch atomically and reports
every step through the callback.
"""

from __future__ import annotations

import gc
import math
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

from workbench.core.data.augmentation.mixing import batch_mixer_for
from workbench.core.data.augmentation.progressive_resizing import (
    describe_sizes,
    resize_prepared_batch,
    training_sizes,
)
from workbench.core.data.batch_preparation import BatchPreparer
from workbench.core.data.data_pipeline import DataPipeline, build_data_pipeline
from workbench.core.data.decode_failures import FailedImages, left_out_message
from workbench.core.data.device_images import DeviceImageSet, load_device_images
from workbench.core.data.image_cache import wait_for_cache_writes
from workbench.core.devices.gpu_monitor import GpuMonitor
from workbench.core.devices.memory import free_device_memory, memory_total
from workbench.core.devices.selection import device_display_name, environment_info, resolve_device
from workbench.core.models.building import build_model, set_train_mode
from workbench.core.models.checkpoint_format import (
    CheckpointError,
    CheckpointSaveError,
    checkpoint_data,
    load_checkpoint,
    model_file_data,
    restore_training_state,
    write_workbench_file,
)
from workbench.core.models.heads import split_backbone_head
from workbench.core.models.prediction_records import PredictionCollector, write_best_predictions
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.control import RunControl
from workbench.core.runs.events import CallbackList, EpochEnd, Message, Progress, RunEnd, RunStart
from workbench.core.runs.model_catalog import TORCHVISION_MODELS, model_facts
from workbench.core.runs.run_folder import (
    BEST_MODEL,
    DECODE_FAILURES,
    LAST_CHECKPOINT,
    MetricsWriter,
    create_run_folder,
    write_run_config,
)
from workbench.core.training.batch_norm_statistics import (
    batch_norm_layers,
    recompute_batch_norm_statistics,
)
from workbench.core.training.batch_sources import BatchSources, EpochBatches
from workbench.core.training.distributed import DistributedContext, set_epoch
from workbench.core.training.early_stopping import early_stopping_for, kept_result_message
from workbench.core.training.faults import TrainingOutOfMemory
from workbench.core.training.feature_cache import extract_features
from workbench.core.training.optimisers import (
    FULL_STAGE,
    apply_finetune_stage,
    build_optimizer,
    build_scheduler,
    finetune_stage,
    optimiser_params,
    steps_each_batch,
)
from workbench.core.training.plan import plan_run
from workbench.core.training.session_setup import (
    epoch_seed,
    fit_to_training_set,
    image_cache_messages,
    learning_rate_note,
    scan_for_training,
    seed_everything,
    share_batches_by_name,
    shutdown_loader_workers,
)
from workbench.core.training.steps import (
    EpochResult,
    EvalResult,
    StepContext,
    evaluate_batches,
    run_training_steps,
)


class TrainingSession:
    """The live state of one run. Use through ``workbench.core.training.engine.train``."""

    def __init__(self, config: TrainConfig, events: CallbackList, control: RunControl) -> None:
        self.config = config
        self.events = events
        self.control = control
        self.dist = DistributedContext.from_env()
        self.run_dir: Path | None = None
        self.epochs_completed = 0
        self.start_epoch = 0
        self.best_epoch = 0
        self.best_val_accuracy = -1.0
        self.best_val_loss = math.nan  # the best epoch's; NaN when an old checkpoint lacks it
        self._epoch_lr = 0.0  # the lr the current epoch trained at (its EpochEnd says it)
        self.best_model_path = ""
        self.last_checkpoint_path = ""
        self.ended: RunEnd | None = None
        self.started = time.monotonic()
        self.failed_images: FailedImages | None = None
        self._writer: MetricsWriter | None = None
        self.early_stopping = early_stopping_for(config)
        self._download_step: int | None = None  # the last percent (or MB) reported
        self._said_batch_norm = False  # the BatchNorm recomputation is said once a run

    # ------------------------------------------------------------------ preparation
    def prepare(self) -> None:
        """Decide the plan, then build what it says: data, run folder, model, optimiser,
        precision, the step context and where each epoch's batches come from."""
        cfg = self.config
        device = self.dist.device_for(resolve_device(cfg.device))
        self.dist.initialise(device)
        if not self.dist.is_main:
            self.events = CallbackList([])
        seed_everything(cfg.seed, cfg.deterministic, device)
        self.plan = plan_run(cfg, device, self.dist.enabled)
        self.device = self.plan.device
        self.scan = scan_for_training(cfg)
        self.config, size_notes = fit_to_training_set(cfg, self.scan, self.dist.world_size)
        cfg = self.config
        resume_state = load_checkpoint(cfg.resume) if cfg.resume else None
        self._open_run_dir(resume_state)
        for level, text in self.dist.start_messages(cfg.batch_size, cfg.imbalance):
            self._say(level, text)
        for warning in self.scan.warnings():
            self._say("warning", warning)
        for level, text in (*size_notes, *self.plan.notes):
            self._say(level, text)
        self._say("info", learning_rate_note(cfg))
        self.training_sizes = self._training_sizes()
        self._build_data()
        # Before the schedule: a one-cycle schedule's length counts this process's steps.
        self.train_loader = self.dist.shard_loader(self.pipeline.train_loader, cfg.seed)
        self._build_model_and_optimiser()
        if resume_state is not None:
            self._restore(resume_state)
        # Frozen for the first epoch's stage before DistributedDataParallel sees the model:
        # it syncs the gradients of the parameters that require one when it wraps them.
        self._stage = self._enter_stage(self.start_epoch)
        self.train_model = self.dist.wrap(self.model, self.device)
        self.ctx = self._step_context()
        self.sources = BatchSources(self.device, self._keep_images_on_device())

    def _training_sizes(self) -> list[int]:
        """Each epoch's training crop (progressive resizing; every one crop_size when off)."""
        cfg = self.config
        smallest = model_facts(cfg.model).min_size if cfg.model in TORCHVISION_MODELS else 8
        sizes = training_sizes(cfg.crop_size, cfg.progressive_resize_start, cfg.epochs,
                               smallest)
        if any(size != cfg.crop_size for size in sizes):
            self._say("info", describe_sizes(sizes, cfg.crop_size))
        return sizes

    def _build_data(self) -> None:
        """The failed-image log, the loaders and the batch preparation on the device."""
        cfg = self.config
        run_log = str(self.run_dir / DECODE_FAILURES) if self.run_dir else None
        self.failed_images = FailedImages(run_log, self.dist.rank, cfg.max_failed_images)
        if cfg.workers > 0:
            share_batches_by_name()
        self.pipeline: DataPipeline = build_data_pipeline(cfg, self.scan, self.device,
                                                          self.failed_images.log)
        for level, text in image_cache_messages(cfg, self.scan):
            self._say(level, text)
        self.preparer = BatchPreparer(self.pipeline.mean, self.pipeline.std, self.device,
                                      self.plan.channels_last)

    def _build_model_and_optimiser(self) -> None:
        cfg = self.config
        self.model = build_model(cfg, len(self.scan.class_names), report=self._say,
                                 on_download_progress=self._report_download,
                                 should_cancel=lambda: self.control.cancel_requested)
        self.model.to(self.device)
        if self.plan.channels_last:
            self.model.to(memory_format=torch.channels_last)
        self.optimizer = build_optimizer(cfg, optimiser_params(self.model, cfg))
        self.scheduler = build_scheduler(cfg, self.optimizer, self._steps_per_epoch())
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.plan.precision.grad_scaler)
        self.head = split_backbone_head(self.model)[1]

    def _step_context(self) -> StepContext:
        cfg, precision = self.config, self.plan.precision
        return StepContext(
            model=self.train_model, device=self.device, optimizer=self.optimizer,
            scaler=self.scaler, amp=precision.autocast, crops=self.pipeline.crops_per_sample,
            strategy=cfg.crop_strategy, class_weights=self.pipeline.class_weights,
            callback=self.events, control=self.control, gpu_monitor=GpuMonitor(self.device),
            max_steps=cfg.max_steps_per_epoch, amp_dtype=precision.dtype,
            on_failed_samples=lambda _failed_in_batch: self.failed_images.check(),
            label_smoothing=cfg.label_smoothing,
            mixer=batch_mixer_for(cfg, len(self.scan.class_names)),
            after_step=self.scheduler.step
            if self.scheduler is not None and steps_each_batch(cfg) else None)

    def _open_run_dir(self, resume_state: dict[str, Any] | None) -> None:
        if not self.dist.is_main:
            return
        if resume_state is not None:
            self.run_dir = Path(self.config.resume).resolve().parent
        else:
            self.run_dir = create_run_folder(self.config)
        environment = {**environment_info(self.device),
                       **self.dist.environment(self.config.batch_size)}
        write_run_config(self.run_dir, self.config, environment, self.scan.summary(),
                         ran=self.plan.what_ran())
        self._writer = MetricsWriter(self.run_dir / "metrics.jsonl")
        self.events.callbacks.append(self._writer)

    def _restore(self, state: dict[str, Any]) -> None:
        path = self.config.resume
        if list(state["class_names"]) != list(self.scan.class_names):
            raise CheckpointError(
                f"{path}: the checkpoint was trained on classes {state['class_names']}, "
                f"but {self.config.data_root} has {self.scan.class_names}"
            )
        kept = restore_training_state(state, path, self.model, self.optimizer, self.scheduler,
                                      self.scaler if self.plan.precision.autocast else None)
        self.start_epoch = self.epochs_completed = int(state["epoch"])
        self.best_epoch = int(state.get("best_epoch", 0))
        self.best_val_accuracy = float(state.get("best_val_accuracy", -1.0))
        saved_loss = state.get("best_val_loss")
        self.best_val_loss = float(saved_loss) if saved_loss is not None else math.nan
        if self.early_stopping is not None:
            problem = self.early_stopping.restore(state.get("early_stopping"))
            if problem:
                self._say("warning", f"Early stopping: {problem}.")
        best = Path(path).resolve().parent / BEST_MODEL
        self.best_model_path = str(best) if best.is_file() else ""
        self.last_checkpoint_path = str(Path(path).resolve())
        stage = finetune_stage(self.config, self.start_epoch)
        next_stage = {None: "", "head": "; the next epoch trains the head only",
                      "full": "; the next epoch trains the whole network"}[stage]
        self._say("warning" if kept else "info",
                  f"Resuming from {path} after epoch {self.start_epoch}{next_stage}.{kept}")

    def _keep_images_on_device(self) -> DeviceImageSet | None:
        if not self.plan.images_on_device:
            return None
        images, report = load_device_images(self.config, self.pipeline, self.device,
                                            self.control)
        self._say("info", report)
        if images is not None:
            self._report_decode_failures()
        return images

    # ------------------------------------------------------------------ the run
    def fit(self) -> RunEnd:
        cfg = self.config
        self.events.on_run_start(self._run_start_event())
        if self.start_epoch >= cfg.epochs:
            self._say("info", f"The checkpoint already holds all {cfg.epochs} epochs.")
            return self._end("completed")
        if self.plan.cache_features and not self._cache_features():
            return self._end("cancelled")
        for epoch in range(self.start_epoch, cfg.epochs):
            self.ctx.epoch = epoch + 1
            result = self._train_epoch_within_memory(epoch)
            if result.cancelled:
                return self._end("cancelled")
            result = self.dist.reduce_epoch(result, self.device)  # every process's share
            self._refresh_batch_norm_statistics(epoch)
            evaluation = self._evaluate()
            if self.control.cancel_requested:
                return self._end("cancelled")
            self._epoch_lr = self.ctx.last_lr  # what its last step trained at
            if self.scheduler is not None and not steps_each_batch(cfg):
                self.scheduler.step()
            # Updated before the checkpoint is written, which keeps its state for a resume.
            stop_early = self.early_stopping is not None and self.early_stopping.update(
                epoch + 1, evaluation.loss, evaluation.accuracy)
            self._finish_epoch(epoch, result, evaluation)
            if stop_early or (self.control.stop_after_epoch_requested and epoch + 1 < cfg.epochs):
                self._say("info", self.early_stopping.reason() if stop_early else
                          f"Stopped on request after epoch {epoch + 1} of {cfg.epochs}.")
                self._say("info", kept_result_message(self.best_epoch, self.best_val_accuracy,
                                                      self.best_val_loss, self.best_model_path))
                break
        return self._end("completed")

    def _steps_per_epoch(self) -> int:
        """Optimiser steps in one of this process's epochs."""
        steps = len(self.train_loader)
        if self.config.max_steps_per_epoch:
            steps = min(steps, self.config.max_steps_per_epoch)
        return steps

    def _run_start_event(self) -> RunStart:
        cfg = self.config
        steps = self._steps_per_epoch()
        return RunStart(
            run_dir=str(self.run_dir or ""), device=self.device,
            device_name=device_display_name(self.device),
            memory_total=memory_total(self.device), amp=self.plan.precision.autocast,
            class_names=tuple(self.scan.class_names), train_samples=len(self.scan.train),
            val_samples=len(self.scan.val), epochs=cfg.epochs, start_epoch=self.start_epoch,
            steps_per_epoch=steps, crops_per_sample=self.pipeline.crops_per_sample,
            feature_cache=self.plan.cache_features, dataset_summary=self.scan.describe(),
            precision=self.plan.precision.label,
            images_on_device=self.sources.device_images is not None,
        )

    def _cache_features(self) -> bool:
        """Compute frozen-backbone features once; False if cancelled meanwhile."""
        backbone = split_backbone_head(self.model)[0]
        started = time.perf_counter()
        def extract(batches: Any) -> Any:
            return extract_features(backbone, batches, self.preparer,
                                    self.pipeline.crops_per_sample, self.ctx.autocast,
                                    self.control, self.device)

        cached = self.sources.cache_features(extract, self.pipeline.train_loader,
                                             self.pipeline.val_loader, self.config.batch_size,
                                             self.plan.cache_train_features)
        if cached is None:
            return False
        self._say("info", f"Cached frozen-backbone features of {cached} images "
                          f"({self.pipeline.crops_per_sample} crop(s) each) in "
                          f"{time.perf_counter() - started:.1f} s; epochs now train the head only.")
        return True

    def _train_epoch_within_memory(self, epoch: int) -> EpochResult:
        """Train one epoch; out of device memory, retry it with half the batch if allowed.

        Raises:
            TrainingOutOfMemory: Retrying is off (``oom_retry_smaller_batch``), the batch is
                already 1, or the run is distributed (every process would have to agree).
        """
        while True:
            try:
                return self._train_epoch(epoch)
            except TrainingOutOfMemory as exc:
                if not self.config.oom_retry_smaller_batch or not exc.smaller_batch \
                        or self.dist.enabled:
                    raise
                failed_batch, smaller = exc.batch_size, exc.smaller_batch
            # Outside the except block, so the error's frames (and the batch) are gone.
            free_device_memory(self.device)
            self._say("warning", f"The device ran out of memory at batch size {failed_batch}; "
                                 f"retrying epoch {epoch + 1} with batch size {smaller} "
                                 "(oom_retry_smaller_batch is on). The steps already taken "
                                 "stay; later epochs and the checkpoint use the smaller batch.")
            self._rebuild_loaders(smaller)

    def _rebuild_loaders(self, batch_size: int) -> None:
        """New loaders at ``batch_size``; the old ones' worker processes are stopped first."""
        self._stop_loader_workers()
        self.config = self.config.replace(batch_size=batch_size)
        self.pipeline = build_data_pipeline(self.config, self.scan, self.device,
                                            self.failed_images.log)
        self.train_loader = self.dist.shard_loader(self.pipeline.train_loader, self.config.seed)

    def _train_epoch(self, epoch: int) -> EpochResult:
        cfg = self.config
        # Each epoch's randomness depends on (seed, epoch) only, so a resumed run matches.
        torch.manual_seed(epoch_seed(cfg.seed, epoch, "torch"))
        set_epoch(self.train_loader, epoch, cfg.seed)
        stage = self._enter_stage(epoch)
        if stage != self._stage:
            self._stage = stage
            self._rewrap_for_new_stage(epoch)
        weights = getattr(self.pipeline.train_loader.sampler, "weights", None)
        source = self.sources.train_epoch(
            self.train_loader, cfg.seed, epoch, cfg.batch_size,
            weights if isinstance(weights, torch.Tensor) else None)
        forward, prepare = self._forward_and_prepare(source, self.train_model)
        size = self.training_sizes[epoch]
        if not source.features and size != cfg.crop_size:
            prepare = resize_prepared_batch(prepare, size, self.plan.channels_last)
        return run_training_steps(self.ctx, source.batches, source.steps, forward, prepare)

    def _enter_stage(self, epoch: int) -> str | None:
        """Freeze or unfreeze for ``epoch``'s fine-tuning stage and set each layer's train
        mode; the stage ('head', 'full'), None with a single-stage mode."""
        if finetune_stage(self.config, epoch) is None:
            set_train_mode(self.model, self.config.finetune)
            return None
        apply_finetune_stage(self.model, self.config, epoch)
        return finetune_stage(self.config, epoch)

    def _rewrap_for_new_stage(self, epoch: int) -> None:
        """The backbone has just been unfrozen: under torchrun wrap the model again, as
        DistributedDataParallel syncs only the parameters that required a gradient when it
        wrapped them (the old wrapper goes first, taking its gradient hooks with it)."""
        if self._stage == FULL_STAGE:
            groups = {group.get("name"): group["lr"] for group in self.optimizer.param_groups}
            self._say("info", f"Epoch {epoch + 1}: the backbone is unfrozen and the whole "
                              f"network learns (head lr {groups.get('head', 0.0):.3g}, backbone "
                              f"lr {groups.get('backbone', 0.0):.3g}).")
        if not self.dist.enabled:
            return
        self.ctx.model = self.train_model = None  # type: ignore[assignment]
        gc.collect()
        self.train_model = self.dist.wrap(self.model, self.device)
        self.ctx.model = self.train_model

    def _refresh_batch_norm_statistics(self, epoch: int) -> None:
        """Recompute the running statistics of the BatchNorm layers that train on training
        batches before validating (``batch_norm_statistics``); said once a run."""
        # Not small_cnn: its two BatchNorm layers validated the same with and without it on
        # the real sets, and it cost a quarter of its first epoch (README).
        if self.config.model not in TORCHVISION_MODELS or self.plan.cache_features or \
                self.control.cancel_requested or not batch_norm_layers(self.model):
            return
        source = self.sources.train_epoch(self.train_loader, self.config.seed, epoch,
                                          self.config.batch_size, None)
        if source.features:
            return
        used = recompute_batch_norm_statistics(self.model, source.batches, self.preparer,
                                               self.ctx.autocast)
        if used and not self._said_batch_norm:
            self._said_batch_norm = True
            batches = "training batch" if used == 1 else "training batches"
            start = {"none": "random weights", "imagenet": "ImageNet's weights"}.get(
                self.config.weights, "the weights file")
            self._say("info", f"Epoch {epoch + 1}: BatchNorm statistics recomputed on {used} "
                              f"{batches} before validation; this repeats before every "
                              "validation, because running averages keep part of their start "
                              f"({start}) and lag weights that are still changing.")

    def _evaluate(self) -> EvalResult:
        self.model.eval()
        source = self.sources.val_epoch(self.pipeline.val_loader, self.config.batch_size)
        forward, prepare = self._forward_and_prepare(source, self.model)
        collector = PredictionCollector(self.pipeline.crops_per_sample,
                                        self.config.crop_strategy)
        watching = collector.watch_head(self.head)
        try:
            return evaluate_batches(source.batches, forward, prepare,
                                    len(self.scan.class_names), self.pipeline.crops_per_sample,
                                    self.config.crop_strategy, self.ctx.autocast, self.control,
                                    collector)
        finally:
            watching.remove()

    def _forward_and_prepare(self, source: EpochBatches, model: nn.Module) -> tuple[Any, Any]:
        """Cached features go to the head as they are; uint8 images are prepared for ``model``."""
        return (self.head, _already_prepared) if source.features else (model, self.preparer)

    def _finish_epoch(self, epoch: int, result: EpochResult, evaluation: EvalResult) -> None:
        number = epoch + 1
        accuracy = evaluation.accuracy if math.isfinite(evaluation.accuracy) else 0.0
        is_best = accuracy > self.best_val_accuracy
        saving = self.dist.is_main and self.run_dir is not None
        # The run's state moves on only once its files are written: a failed save must not
        # leave the run (or its events) claiming an epoch or a best model that is not on disk.
        if is_best:
            if saving:
                self._save(BEST_MODEL, model_file_data(
                    self.model, self.scan.class_names, self.config, number, accuracy))
                self.best_model_path = str(self.run_dir / BEST_MODEL)
                problem = write_best_predictions(evaluation.predictions, self.run_dir,
                                                 self.scan.val, self.scan.class_names,
                                                 self.config.data_root)
                if problem:
                    self._say("warning", problem)
            self.best_val_accuracy, self.best_epoch = accuracy, number
            self.best_val_loss = evaluation.loss
        if saving:
            self._save(LAST_CHECKPOINT, checkpoint_data(
                self.model, self.optimizer, self.scheduler,
                self.scaler if self.plan.precision.autocast else None,
                number, self.best_val_accuracy, self.best_epoch, self.scan.class_names,
                self.config, self.best_val_loss,
                self.early_stopping.state_dict() if self.early_stopping else None,
                finetune_stage=self._stage))
            self.last_checkpoint_path = str(self.run_dir / LAST_CHECKPOINT)
        self.epochs_completed = number
        # Every process's failed images count; gathered before the barrier, so that the
        # barrier stays the last collective of an epoch (and of the run).
        failures = self.dist.gather_failures(self.failed_images.logged())
        self.dist.barrier()
        self.events.on_epoch_end(EpochEnd(
            epoch=number, epochs=self.config.epochs, train_loss=result.loss,
            train_accuracy=result.accuracy, val_loss=evaluation.loss, val_accuracy=accuracy,
            per_class_accuracy=evaluation.confusion.per_class_accuracy(),
            confusion=evaluation.confusion.as_tuple(),
            lr=self._epoch_lr, epoch_seconds=result.seconds,
            images_per_second=result.samples / result.seconds if result.seconds else 0.0,
            is_best=is_best, best_epoch=self.best_epoch,
            best_val_accuracy=self.best_val_accuracy, checkpoint_path=self.last_checkpoint_path,
        ))
        self._report_decode_failures(failures)

    def _save(self, name: str, data: dict[str, Any]) -> None:
        """Write one run file; on failure say what is kept and that the run stops here."""
        try:
            write_workbench_file(data, self.run_dir / name)
        except CheckpointSaveError as exc:
            kept = (f"'{self.last_checkpoint_path}' still holds epoch {self.epochs_completed}"
                    if self.last_checkpoint_path else "no earlier epoch had been saved")
            raise CheckpointSaveError(
                f"{exc}. The run stopped, because every further epoch would be lost the same "
                f"way; {kept}. Free some space or choose a writable output folder, then resume"
            ) from exc

    def _report_decode_failures(self, failures: list[tuple[str, str]] | None = None) -> None:
        """Name the images that failed since the last report, and stop the run past
        ``max_failed_images``. ``failures``: every process's, else this process's own."""
        failures = self.failed_images.logged() if failures is None else failures
        new = self.failed_images.not_yet_reported(failures)
        if new:
            self._say("warning", left_out_message(new))
            self.failed_images.check(failures)

    def _end(self, status: str) -> RunEnd:
        if status == "completed":
            # The next run finds the image cache complete. A stopped or failed run ends at
            # once: its writes (up to BACKGROUND_WRITES_BYTES, 0.4 ms a small file) go on.
            wait_for_cache_writes()
        if status == "cancelled":
            kept = (f"{self.last_checkpoint_path} holds epoch {self.epochs_completed}"
                    if self.last_checkpoint_path else "no epoch had finished, so nothing was saved")
            self._say("info", f"Stopped on request; {kept}.")
        end = RunEnd(
            status=status, epochs_completed=self.epochs_completed, best_epoch=self.best_epoch,
            best_val_accuracy=max(self.best_val_accuracy, 0.0), run_dir=str(self.run_dir or ""),
            best_model_path=self.best_model_path, last_checkpoint_path=self.last_checkpoint_path,
            seconds=time.monotonic() - self.started,
        )
        self.ended = end
        self.events.on_run_end(end)
        return end

    def _say(self, level: str, text: str) -> None:
        self.events.on_message(Message(level, text))

    def _report_download(self, received: int, total: int | None) -> None:
        """A ``Progress`` event when the whole percent (or, size unknown, MB) changes."""
        step = (100 * received // total) if total else received // 1_000_000
        if step == self._download_step and received != total:
            return
        self._download_step = step
        self.events.on_progress(Progress("Downloading ImageNet weights", received, total))

    def close(self, kill_loader_workers: bool = False) -> None:
        """Stop loader workers and close files, however the run ended.

        Args:
            kill_loader_workers: Kill the loader processes instead of asking them to stop, for
                a run that ended because one died or hung (a hung one would not answer).
        """
        self._stop_loader_workers(kill_loader_workers)
        if self._writer is not None:
            self._writer.close()
        if self.failed_images is not None:
            self.failed_images.close()
        self.dist.shutdown()

    def _stop_loader_workers(self, kill: bool = False) -> None:
        for loader in (getattr(self, "train_loader", None),
                       getattr(getattr(self, "pipeline", None), "train_loader", None),
                       getattr(getattr(self, "pipeline", None), "val_loader", None)):
            shutdown_loader_workers(loader, kill)


def _already_prepared(inputs: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return inputs, labels
