"""Models: ResNet18 transfer learning or a small digits CNN, fine-tune modes, backbone/head split.

Every model keeps its classifier head in ``model.fc`` so that fine-tune modes, the frozen-backbone
feature cache and weight files all speak of the same layer.
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

from workbench.core.models.safe_load import UnsafeOrUnreadableFile, load_tensors_file
from workbench.core.models.weights_download import DownloadError, ProgressCallback, download_file
from workbench.core.runs.config import FINETUNE_MODES, TrainConfig
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
        ValueError: Unknown model, weights or fine-tune mode.
    """
    report = report or _warn_only
    if num_classes < 1:
        raise ValueError(f"num_classes must be at least 1 (got {num_classes})")
    if config.model == "resnet18":
        model = _build_resnet18(config, num_classes, report, on_download_progress,
                                should_cancel)
    elif config.model == "small_cnn":
        if config.weights == "imagenet":
            raise WeightsError("small_cnn has no ImageNet weights; choose weights 'none' or 'file'")
        model = SmallCNN(num_classes, in_channels=config.in_channels)
        if config.weights == "file":
            load_weights_file(model, config.weights_file, report)
        elif config.weights != "none":
            raise ValueError(f"unknown weights '{config.weights}'")
    else:
        raise ValueError(f"unknown model '{config.model}'")
    apply_finetune_mode(model, config.finetune)
    return model


def _build_resnet18(config: TrainConfig, num_classes: int, report: Report,
                    on_download_progress: ProgressCallback | None,
                    should_cancel: Callable[[], bool] | None) -> nn.Module:
    if config.weights == "imagenet":
        model = torchvision.models.resnet18(weights=None)
        path = imagenet_weights_path()
        try:
            model.load_state_dict(_imagenet_state_dict(report, on_download_progress,
                                                       should_cancel))
        except (RuntimeError, TypeError, AttributeError) as exc:
            raise WeightsError(
                f"ImageNet weights file '{path}' does not hold resnet18 weights "
                f"({str(exc).splitlines()[0]}); delete it so it is downloaded again."
            ) from exc
        model.fc = nn.Linear(model.fc.in_features, num_classes)
        report("info", f"ImageNet weights loaded from '{path}'; the {num_classes}-class head "
                       "starts fresh")
        return model
    model = torchvision.models.resnet18(weights=None, num_classes=num_classes)
    if config.weights == "file":
        load_weights_file(model, config.weights_file, report)
    elif config.weights != "none":
        raise ValueError(f"unknown weights '{config.weights}'")
    return model


def imagenet_weights_url() -> str:
    """Where torchvision publishes the ResNet18 ImageNet file (its name carries its hash)."""
    return torchvision.models.ResNet18_Weights.IMAGENET1K_V1.url


def imagenet_weights_path() -> Path:
    """Where the ResNet18 ImageNet file is expected: ``torch.hub.get_dir()/checkpoints/<name>``."""
    file_name = Path(urlparse(imagenet_weights_url()).path).name
    return Path(torch.hub.get_dir()) / "checkpoints" / file_name


def imagenet_weights_size() -> int:
    """Bytes of the ResNet18 ImageNet file, from torchvision's weights metadata (``_file_size``
    is in MiB there, to three decimals: this is right to about a kilobyte)."""
    return round(torchvision.models.ResNet18_Weights.IMAGENET1K_V1.meta["_file_size"] * 2**20)


def download_imagenet_weights(on_progress: ProgressCallback | None = None,
                              should_cancel: Callable[[], bool] | None = None) -> Path:
    """Download the ResNet18 ImageNet file to ``imagenet_weights_path()``, checked against the
    hash in its name; nothing is left there when it fails or is cancelled.

    Raises:
        WeightsError: the download failed; the message says where to copy the file instead.
        DownloadCancelled: ``should_cancel`` stopped it.
    """
    url = imagenet_weights_url()
    path = imagenet_weights_path()
    match = torch.hub.HASH_REGEX.search(path.name)
    try:
        return download_file(url, path, match.group(1) if match else None,
                             on_progress=on_progress, should_cancel=should_cancel)
    except DownloadError as exc:
        raise WeightsError(
            f"ImageNet weights for resnet18 are not on this computer and could not be "
            f"downloaded from {url} ({exc}). Copy the file '{path.name}' into the folder "
            f"'{path.parent}', or choose weights 'none' (random start) or 'file' "
            "(a state_dict file you have)."
        ) from exc


def _imagenet_state_dict(report: Report, on_download_progress: ProgressCallback | None,
                         should_cancel: Callable[[], bool] | None) -> dict[str, Tensor]:
    """The ImageNet state dict from the hub cache, downloading it once when it is not there.

    ``resnet18(weights=...)`` would fetch the same file, but it prints to stdout, cannot be
    cancelled and does not restrict unpickling; this uses the same URL, cache file and hash
    check, reports progress, and loads it with ``torch.load(weights_only=True)`` like every
    other file.
    """
    path = imagenet_weights_path()
    if not path.is_file():
        report("info", f"Downloading ImageNet weights for resnet18 to '{path}'")
        download_imagenet_weights(on_download_progress, should_cancel)
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

    The head keeps its size: a file whose ``fc`` has another number of outputs has those keys
    skipped and reported. Other missing, unexpected or mis-shaped keys are reported as warnings.

    Raises:
        WeightsError: The file is missing, unreadable, not a state dict, or matches no layer.
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
    usable: dict[str, Tensor] = {}
    head_skipped: list[str] = []
    misshaped: list[str] = []
    for key, value in state.items():
        if key not in own:
            continue
        if own[key].shape == value.shape:
            usable[key] = value
        elif key.startswith("fc."):
            head_skipped.append(key)
        else:
            misshaped.append(f"{key} (file {tuple(value.shape)}, model {tuple(own[key].shape)})")
    if not any(not key.startswith("fc.") for key in usable):
        raise WeightsError(
            f"weights file '{path}' matches no layer of this {type(model).__name__} backbone "
            f"(its {len(state)} tensors start with {_short_list(list(state))}); "
            "was it saved from a different model?"
        )
    if head_skipped:
        file_classes = state["fc.weight"].shape[0] if "fc.weight" in state else "another number of"
        model_classes = own["fc.weight"].shape[0]
        report("info", f"{', '.join(head_skipped)}: file has {file_classes} classes, this dataset "
                       f"has {model_classes}; the head starts fresh")
    if misshaped:
        report("warning", f"{len(misshaped)} tensor(s) in '{path}' have another shape and keep "
                          f"their random start: {_short_list(misshaped)}")
    missing = [k for k in own if k not in state and not k.endswith("num_batches_tracked")]
    if missing:
        report("warning", f"{len(missing)} layer tensor(s) are not in '{path}' and keep their "
                          f"random start: {_short_list(missing)}")
    unexpected = [k for k in state if k not in own]
    if unexpected:
        report("warning", f"{len(unexpected)} tensor(s) in '{path}' belong to no layer of this "
                          f"model and were ignored: {_short_list(unexpected)}")
    return usable


def _short_list(items: list[str]) -> str:
    shown = ", ".join(items[:_LIST_LIMIT])
    return shown if len(items) <= _LIST_LIMIT else f"{shown}, ... ({len(items)} in all)"


def _warn_only(level: str, text: str) -> None:
    if level == "warning":
        warnings.warn(text, WorkbenchWarning, stacklevel=3)


def _head(model: nn.Module) -> nn.Module:
    head = getattr(model, "fc", None)
    if not isinstance(head, nn.Module):
        raise TypeError(f"{type(model).__name__} has no 'fc' head")
    return head


def apply_finetune_mode(model: nn.Module, finetune: str) -> list[nn.Parameter]:
    """Set ``requires_grad`` for ``finetune`` and return the parameters to optimise.

    'last_layer' trains only ``model.fc``; 'full' trains everything.
    """
    if finetune not in FINETUNE_MODES:
        raise ValueError(f"unknown finetune mode '{finetune}' (use {', '.join(FINETUNE_MODES)})")
    if finetune == "full":
        model.requires_grad_(True)
        return list(model.parameters())
    model.requires_grad_(False)
    head = _head(model)
    head.requires_grad_(True)
    return list(head.parameters())


def set_train_mode(model: nn.Module, finetune: str) -> None:
    """``model.train()``, except that with 'last_layer' everything but the head stays in eval mode.

    A frozen backbone then keeps its BatchNorm running statistics and uses no dropout, so the
    features it produces do not drift during training (and can be cached).
    """
    if finetune not in FINETUNE_MODES:
        raise ValueError(f"unknown finetune mode '{finetune}' (use {', '.join(FINETUNE_MODES)})")
    model.train()
    if finetune == "last_layer":
        head = _head(model)
        for child in model.children():
            if child is not head:
                child.eval()


def split_backbone_head(model: nn.Module) -> tuple[nn.Module, nn.Module]:
    """Split ``model`` into ``backbone`` (images -> ``[N, F]``) and ``head`` (features -> logits).

    Both share ``model``'s modules and weights (nothing is copied), and
    ``head(backbone(x))`` equals ``model(x)``.
    """
    if isinstance(model, torchvision.models.ResNet):
        # The layers of ResNet.forward in order, with flatten in place of the final fc.
        backbone = nn.Sequential(
            model.conv1, model.bn1, model.relu, model.maxpool,
            model.layer1, model.layer2, model.layer3, model.layer4,
            model.avgpool, nn.Flatten(1),
        )
        return backbone, model.fc
    if isinstance(model, SmallCNN):
        return model.features, model.fc
    raise TypeError(f"cannot split a {type(model).__name__} into backbone and head")
