"""Models: torchvision's classification models (``model_catalog``) for transfer learning, or a
small digits CNN; their weights (ImageNet, or a file) and fine-tune modes.

Every family keeps its classifier head somewhere else; ``heads`` finds it, so fine-tune modes,
the frozen-backbone feature cache and weight files all speak of the same layer.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import torch
import torchvision
from torch import Tensor, nn

from workbench.core.models.heads import classifier_head, head_state_prefix, replace_head
from workbench.core.models.safe_load import UnsafeOrUnreadableFile, load_tensors_file
from workbench.core.models.weights_download import DownloadError, ProgressCallback, download_file
from workbench.core.runs.config import FINETUNE_MODES, TrainConfig
from workbench.core.runs.model_catalog import (
    SMALL_CNN,
    TORCHVISION_MODELS,
    imagenet_weights_entry,
    unknown_model_message,
)
from workbench.core.warnings import WorkbenchWarning

Report = Callable[[str, str], None]
"""``report(level, text)`` with level 'info' or 'warning'."""

# Prefixes that wrappers add to state-dict keys: DistributedDataParallel and torch.compile.
_WRAPPER_PREFIXES = ("module.", "_orig_mod.")
_WORKBENCH_FORMATS = ("workbench-checkpoint", "workbench-model")
_LIST_LIMIT = 8


class WeightsError(Exception):
    """Weights could not be obtained or loaded; the message names the file and what to do."""


class SmallCNN(nn.Module):
    """A small CNN for digit-like grayscale images (28x28 by design, any size >= 16 works).

    ``features`` maps images to ``[N, 128]`` vectors and ``fc`` maps those to logits, so
    ``model.fc(model.features(x))`` equals ``model(x)``.
    """

    def __init__(self, num_classes: int, in_channels: int = 1) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 32, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(32),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            # 28x28 inputs arrive here as 7x7; other crop sizes are pooled to the same grid.
            nn.AdaptiveAvgPool2d((7, 7)),
            nn.Flatten(1),
            nn.Linear(64 * 7 * 7, 128),
            nn.ReLU(inplace=True),
            nn.Dropout(0.25),
        )
        self.fc = nn.Linear(128, num_classes)
        for module in self.modules():
            if isinstance(module, (nn.Conv2d, nn.Linear)):
                nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.BatchNorm2d):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc(self.features(x))


def build_model(config: TrainConfig, num_classes: int, report: Report | None = None,
                on_download_progress: ProgressCallback | None = None,
                should_cancel: Callable[[], bool] | None = None) -> nn.Module:
    """Build ``config.model`` with ``config.weights``, a ``num_classes`` head and fine-tune mode.

    Args:
        config: Uses ``model``, ``weights``, ``weights_file`` and ``finetune``.
        num_classes: Outputs of the new head; the head is always this size.
        report: Receives ``(level, text)`` messages about the weights (what was loaded, which
            keys were skipped). Without it, warnings become ``WorkbenchWarning``s.
        on_download_progress: ``(received_bytes, total_bytes)`` while the ImageNet weights
            are downloaded (once per machine).
        should_cancel: asked between chunks of that download; True stops it.

    Raises:
        WeightsError: The weights could not be downloaded, found or loaded.
        DownloadCancelled: ``should_cancel`` stopped the download; no file was left.
        ValueError: Unknown model (the message lists the choices), weights or fine-tune mode.
    """
    report = report or _warn_only
    if num_classes < 1:
        raise ValueError(f"num_classes must be at least 1 (got {num_classes})")
    if config.model in TORCHVISION_MODELS:
        model = _build_torchvision_model(config, num_classes, report, on_download_progress,
                                         should_cancel)
    elif config.model == SMALL_CNN:
        if config.weights == "imagenet":
            raise WeightsError("small_cnn has no ImageNet weights; choose weights 'none' or 'file'")
        model = SmallCNN(num_classes, in_channels=config.in_channels)
        if config.weights == "file":
            load_weights_file(model, config.weights_file, report)
        elif config.weights != "none":
            raise ValueError(f"unknown weights '{config.weights}'")
    else:
        raise ValueError(unknown_model_message(config.model))
    apply_finetune_mode(model, config.finetune)
    return model


def _build_torchvision_model(config: TrainConfig, num_classes: int, report: Report,
                             on_download_progress: ProgressCallback | None,
                             should_cancel: Callable[[], bool] | None) -> nn.Module:
    name = config.model
    if config.weights == "imagenet":
        model = torchvision.models.get_model(name, weights=None)
        path = imagenet_weights_path(name)
        try:
            model.load_state_dict(_imagenet_state_dict(name, report, on_download_progress,
                                                       should_cancel))
        except (RuntimeError, TypeError, AttributeError) as exc:
            raise WeightsError(
                f"ImageNet weights file '{path}' does not hold {name} weights "
                f"({str(exc).splitlines()[0]}); delete it so it is downloaded again."
            ) from exc
        replace_head(model, num_classes)
        report("info", f"ImageNet weights loaded from '{path}'; the {num_classes}-class head "
                       "starts fresh")
        return model
    model = torchvision.models.get_model(name, weights=None, num_classes=num_classes)
    if config.weights == "file":
        load_weights_file(model, config.weights_file, report)
    elif config.weights != "none":
        raise ValueError(f"unknown weights '{config.weights}'")
    return model


def imagenet_weights_url(model: str = "resnet18") -> str:
    """Where torchvision publishes ``model``'s ImageNet file (its name carries its hash)."""
    return imagenet_weights_entry(model).url


def imagenet_weights_path(model: str = "resnet18") -> Path:
    """Where ``model``'s ImageNet file is expected: ``torch.hub.get_dir()/checkpoints/<name>``,
    where torchvision's own ``weights=`` would keep it."""
    file_name = Path(urlparse(imagenet_weights_url(model)).path).name
    return Path(torch.hub.get_dir()) / "checkpoints" / file_name


def imagenet_weights_size(model: str = "resnet18") -> int:
    """Bytes of ``model``'s ImageNet file, from torchvision's weights metadata (``_file_size``
    is in MiB there, to three decimals: this is right to about a kilobyte)."""
    return round(imagenet_weights_entry(model).meta["_file_size"] * 2**20)


def download_imagenet_weights(on_progress: ProgressCallback | None = None,
                              should_cancel: Callable[[], bool] | None = None,
                              model: str = "resnet18") -> Path:
    """Download ``model``'s ImageNet file to ``imagenet_weights_path(model)``, checked against
    the hash in its name; nothing is left there when it fails or is cancelled.

    Raises:
        WeightsError: the download failed; the message says where to copy the file instead.
        DownloadCancelled: ``should_cancel`` stopped it.
    """
    url = imagenet_weights_url(model)
    path = imagenet_weights_path(model)
    match = torch.hub.HASH_REGEX.search(path.name)
    try:
        return download_file(url, path, match.group(1) if match else None,
                             on_progress=on_progress, should_cancel=should_cancel)
    except DownloadError as exc:
        raise WeightsError(
            f"ImageNet weights for {model} are not on this computer and could not be "
            f"downloaded from {url} ({exc}). Copy the file '{path.name}' into the folder "
            f"'{path.parent}', or choose weights 'none' (random start) or 'file' "
            "(a state_dict file you have)."
        ) from exc


def _imagenet_state_dict(model: str, report: Report,
                         on_download_progress: ProgressCallback | None,
                         should_cancel: Callable[[], bool] | None) -> dict[str, Tensor]:
    """The ImageNet state dict from the hub cache, downloading it once when it is not there.

    ``get_model(model, weights=...)`` would fetch the same file, but it prints to stdout, cannot be
    cancelled and does not restrict unpickling; this uses the same URL, cache file and hash
    check, reports progress, and loads it with ``torch.load(weights_only=True)`` like every
    other file.
    """
    path = imagenet_weights_path(model)
    if not path.is_file():
        report("info", f"Downloading ImageNet weights for {model} to '{path}'")
        download_imagenet_weights(on_download_progress, should_cancel, model)
    try:
        state = load_tensors_file(path)
    except UnsafeOrUnreadableFile as exc:
        raise WeightsError(
            f"ImageNet weights file '{path}' cannot be loaded ({exc}); "
            "delete it so it is downloaded again, or copy an intact copy there."
        ) from exc
    return state


def load_weights_file(model: nn.Module, weights_file: str | Path, report: Report) -> None:
    """Load a state dict (or a workbench checkpoint/model file) into ``model``.

    Accepts a plain state dict, a dict holding one under "model" or "state_dict", or a
    workbench file (a training checkpoint gives its "best_model" when it has one).

    The head keeps its size: a file whose head has another number of outputs has those keys
    skipped and reported. Missing or unexpected keys are reported as warnings.

    Raises:
        WeightsError: The file is missing, unreadable, not a state dict, matches no layer, or
            has layers of other shapes (another architecture's file; the message names them).
    """
    path = Path(weights_file)
    if not str(weights_file) or not path.is_file():
        raise WeightsError(f"weights file '{path}' does not exist; choose a .pt/.pth state_dict")
    try:
        loaded = load_tensors_file(path)
    except UnsafeOrUnreadableFile as exc:
        raise WeightsError(f"weights file '{path}' cannot be loaded: {exc}") from exc
    state = strip_wrapper_prefixes(_find_state_dict(loaded, path))
    usable = _match_state_dict(model, state, path, report)
    model.load_state_dict(usable, strict=False)
    report("info", f"Loaded {len(usable)} tensors from '{path}'")


def _find_state_dict(loaded: Any, path: Path) -> dict[str, Tensor]:
    if isinstance(loaded, Mapping):
        if loaded.get("format") in _WORKBENCH_FORMATS:
            best = loaded.get("best_model")
            loaded = best if best is not None else loaded.get("model")
        elif isinstance(loaded.get("model"), Mapping):
            loaded = loaded["model"]
        elif isinstance(loaded.get("state_dict"), Mapping):
            loaded = loaded["state_dict"]
    if not isinstance(loaded, Mapping):
        raise WeightsError(f"weights file '{path}' is not a state dict "
                           f"(it holds a {type(loaded).__name__})")
    tensors = {k: v for k, v in loaded.items() if isinstance(k, str) and isinstance(v, Tensor)}
    if not tensors:
        raise WeightsError(f"weights file '{path}' is not a state dict (it holds no named tensors)")
    return tensors


def strip_wrapper_prefixes(state: Mapping[str, Tensor]) -> dict[str, Tensor]:
    """Drop the ``module.`` / ``_orig_mod.`` prefixes DDP and torch.compile add to keys."""
    cleaned: dict[str, Tensor] = {}
    for key, value in state.items():
        for prefix in _WRAPPER_PREFIXES:
            while key.startswith(prefix):
                key = key[len(prefix):]
        cleaned[key] = value
    return cleaned


def _match_state_dict(
    model: nn.Module, state: dict[str, Tensor], path: Path, report: Report
) -> dict[str, Tensor]:
    """The tensors of ``state`` that fit ``model``; everything left out is reported."""
    own = model.state_dict()
    head = head_state_prefix(model)
    usable: dict[str, Tensor] = {}
    head_skipped: list[str] = []
    misshaped: list[str] = []
    for key, value in state.items():
        if key not in own:
            continue
        if own[key].shape == value.shape:
            usable[key] = value
        elif key.startswith(head):
            head_skipped.append(key)
        else:
            misshaped.append(key)
    if not any(not key.startswith(head) for key in usable):
        raise WeightsError(
            f"weights file '{path}' matches no layer of this {type(model).__name__} backbone "
            f"(its {len(state)} tensors start with {_short_list(list(state))}); "
            "was it saved from a different model?"
        )
    if misshaped:
        # Layers of the same name and another shape: another architecture (resnet50's file
        # for resnet18, efficientnet_b1's for b0). Half-loading it would train a network that
        # is neither, so it is refused.
        layers = _layer_shapes(misshaped, state, own)
        raise WeightsError(
            f"weights file '{path}' was saved from another architecture: {len(layers)} "
            f"layer(s) have other shapes than in this {type(model).__name__}: "
            f"{_short_list(layers)}; choose a file saved from the same model")
    if head_skipped:
        weight = head + "weight"
        file_classes = state[weight].shape[0] if weight in state else "another number of"
        report("info", f"{', '.join(head_skipped)}: file has {file_classes} classes, this dataset "
                       f"has {own[weight].shape[0]}; the head starts fresh")
    missing = [k for k in own if k not in state and not k.endswith("num_batches_tracked")]
    if missing:
        report("warning", f"{len(missing)} layer tensor(s) are not in '{path}' and keep their "
                          f"random start: {_short_list(missing)}")
    unexpected = [k for k in state if k not in own]
    if unexpected:
        report("warning", f"{len(unexpected)} tensor(s) in '{path}' belong to no layer of this "
                          f"model and were ignored: {_short_list(unexpected)}")
    return usable


def _layer_shapes(keys: list[str], state: Mapping[str, Tensor],
                  own: Mapping[str, Tensor]) -> list[str]:
    """'features.2.block.0.0 (file (72, 16, 1, 1), model (64, 16, 1, 1))' for each layer of
    ``keys``, shown by its first tensor (a BatchNorm's four tensors name one layer once)."""
    first_key: dict[str, str] = {}
    for key in keys:
        first_key.setdefault(key.rpartition(".")[0], key)
    return [f"{layer} (file {tuple(state[key].shape)}, model {tuple(own[key].shape)})"
            for layer, key in first_key.items()]


def _short_list(items: list[str]) -> str:
    shown = ", ".join(items[:_LIST_LIMIT])
    return shown if len(items) <= _LIST_LIMIT else f"{shown}, ... ({len(items)} in all)"


def _warn_only(level: str, text: str) -> None:
    if level == "warning":
        warnings.warn(text, WorkbenchWarning, stacklevel=3)


def apply_finetune_mode(model: nn.Module, finetune: str) -> list[nn.Parameter]:
    """Set ``requires_grad`` for ``finetune`` and return the parameters to optimise.

    'last_layer' trains only the classifier head (``heads.classifier_head``); 'full' trains
    everything. 'head_then_full' is set up here as its whole-network stage (the larger one,
    which memory and speed probes measure and the LR finder sweeps); a run freezes the
    backbone for its head epochs itself (``training.optimisers.apply_finetune_stage``).
    """
    if finetune not in FINETUNE_MODES:
        raise ValueError(f"unknown finetune mode '{finetune}' (use {', '.join(FINETUNE_MODES)})")
    if finetune in ("full", "head_then_full"):
        model.requires_grad_(True)
        return list(model.parameters())
    model.requires_grad_(False)
    head = classifier_head(model)
    head.requires_grad_(True)
    return list(head.parameters())


def set_train_mode(model: nn.Module, finetune: str) -> None:
    """``model.train()``, except that with 'last_layer' everything but the head stays in eval mode.

    A frozen backbone then keeps its BatchNorm running statistics and uses no dropout, so the
    features it produces do not drift during training (and can be cached). 'head_then_full'
    is its whole-network stage here, as in ``apply_finetune_mode``.
    """
    if finetune not in FINETUNE_MODES:
        raise ValueError(f"unknown finetune mode '{finetune}' (use {', '.join(FINETUNE_MODES)})")
    model.train()
    if finetune == "last_layer":
        # Every layer outside the head, however deep (MobileNet's dropout sits beside its head
        # inside 'classifier'), so the frozen part computes what the feature cache holds.
        head_layers = set(classifier_head(model).modules())
        for module in model.modules():
            if module is not model and module not in head_layers:
                module.training = False
