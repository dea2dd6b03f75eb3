"""Export every catalogue model to TorchScript and ONNX and verify both files.

``python -m workbench.bench.export_families [--models a,b] [--crop 224] [--trained-logits 40]
[-o FILE.json]``

Each model is built with random weights (nothing downloaded) and a 3-class head, its
BatchNorm statistics set from the kind of images the exports are verified with (random
pixels, normalised; so that eval mode is not the identity and the logits are not vanishingly
small; a head torchvision starts at zero, as ViT's, gets random weights), and exported with
its preprocessing at ``--crop`` px (small_cnn at its own 28 px, greyscale). Both files are
checked against the eager model in one fresh Python process shared by all of them
(``FreshProcessVerifier``). The table says how each TorchScript file was made (scripted, or
traced and why), the largest logit difference each file showed in that process beside the
largest logit the model gave and how far the eager model's own float32 logits are from its
float64 ones (the scale the differences are read against: a random network can amplify
rounding), and the seconds both exports took. ``--trained-logits X`` scales the head so that
the largest |logit| is about X, as after training (random heads give logits near 1; rounding
grows with the logits), and the table then also gives the ONNX difference as a share of that
scale: what the export check's tolerance (``RELATIVE_TOLERANCE`` of the largest |logit|) is
held against. The files are written to a temporary folder and deleted.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from workbench.core.data.transforms import normalization_for
from workbench.core.models.building import build_model
from workbench.core.models.export import export_torchscript
from workbench.core.models.export_files import ExportError, FreshProcessVerifier
from workbench.core.models.onnx_export import export_onnx
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.model_catalog import (
    MODEL_NAMES,
    SMALL_CNN,
    model_facts,
    model_names_from_list,
)
from workbench.core.runs.model_defaults import defaults_for

CLASS_NAMES = ("a", "b", "c")


@dataclass(frozen=True)
class ExportedFamilyRow:
    """One model exported both ways; a diff is None where that export failed (``error``)."""

    family: str
    model: str
    crop: int
    how: str
    max_logit: float
    float64_diff: float
    torchscript_max_diff: float | None
    onnx_max_diff: float | None
    torchscript_seconds: float
    onnx_seconds: float
    error: str = ""

    @property
    def seconds(self) -> float:
        return self.torchscript_seconds + self.onnx_seconds


def export_catalogue(models: Sequence[str] = MODEL_NAMES, crop: int = 224,
                     on_row: Callable[[ExportedFamilyRow], None] | None = None,
                     trained_logits: float | None = None) -> list[ExportedFamilyRow]:
    """Export each of ``models`` both ways at ``crop`` px; one row each, in order.
    ``trained_logits``: scale each head so that its largest |logit| is about this."""
    rows = []
    with FreshProcessVerifier() as verifier, \
            tempfile.TemporaryDirectory(prefix="workbench-export-families-") as folder:
        for name in models:
            row = _export_one(name, crop, Path(folder), verifier, trained_logits)
            rows.append(row)
            if on_row is not None:
                on_row(row)
    return rows


def _export_one(name: str, crop: int, folder: Path, verifier: FreshProcessVerifier,
                trained_logits: float | None = None) -> ExportedFamilyRow:
    family = "small_cnn" if name == SMALL_CNN else model_facts(name).family
    if name == SMALL_CNN:
        crop = int(defaults_for(name)["crop_size"])
    config = TrainConfig(model=name, weights="none", finetune="full", crop_mode="standard",
                         resize_size=crop + crop // 7, crop_size=crop)
    torch.manual_seed(0)
    model = build_model(config, len(CLASS_NAMES))
    max_logit, float64_diff = _set_batchnorm_statistics(model, config)
    if trained_logits:
        gain = trained_logits / max_logit
        head = [layer for layer in model.modules() if isinstance(layer, torch.nn.Linear)][-1]
        with torch.no_grad():
            head.weight.mul_(gain)
            head.bias.mul_(gain)
        max_logit, float64_diff = max_logit * gain, float64_diff * gain
    seconds, diffs, how, errors = [0.0, 0.0], [None, None], "", []
    for index, (export, suffix) in enumerate(((export_torchscript, ".pt"),
                                              (export_onnx, ".onnx"))):
        path = folder / f"{name}{suffix}"
        started = time.perf_counter()
        try:
            result = export(model, CLASS_NAMES, config, path, verifier=verifier)
        except ExportError as exc:
            errors.append(str(exc).splitlines()[0])
        else:
            diffs[index] = result.subprocess_max_abs_diff
            if index == 0:
                how = result.how.removeprefix("TorchScript, ")
        seconds[index] = time.perf_counter() - started
        path.unlink(missing_ok=True)
    return ExportedFamilyRow(family, name, crop, how or "failed", max_logit, float64_diff,
                             diffs[0],
                             diffs[1], seconds[0], seconds[1], "; ".join(errors))


def _set_batchnorm_statistics(model: torch.nn.Module, config: TrainConfig
                              ) -> tuple[float, float]:
    """Give every BatchNorm the mean and variance of two batches of the images the exports
    are verified with (random uint8 pixels, normalised) and a zero-initialised Linear layer
    random weights; leave ``model`` in eval mode.

    Returns the largest |logit| on such a batch, and the largest difference between those
    logits and the same model's in float64: how far float32 rounding alone moves them, the
    scale an export's difference is read against.
    """
    norms = [module for module in model.modules()
             if isinstance(module, torch.nn.modules.batchnorm._BatchNorm)]
    mean, std = normalization_for(config)
    mean_t, std_t = torch.tensor(mean).view(1, -1, 1, 1), torch.tensor(std).view(1, -1, 1, 1)
    generator = torch.Generator().manual_seed(1)

    def images() -> torch.Tensor:
        shape = (4, config.in_channels, config.crop_size, config.crop_size)
        pixels = torch.randint(0, 256, shape, generator=generator, dtype=torch.uint8)
        return (pixels / 255.0 - mean_t) / std_t

    with torch.no_grad():
        for layer in model.modules():
            if isinstance(layer, torch.nn.Linear) and not layer.weight.any():
                torch.nn.init.normal_(layer.weight, std=layer.in_features ** -0.5)
        if norms:
            for norm in norms:
                norm.reset_running_stats()
                norm.momentum = None  # a cumulative average of the batches
            model.train()
            for _ in range(2):
                model(images())
            for norm in norms:
                norm.momentum = 0.1
        model.eval()
        batch = images()
        logits = model(batch)
        exact = copy.deepcopy(model).double()(batch.double())
    return float(logits.abs().max()), float((logits.double() - exact).abs().max())


def table(rows: Sequence[ExportedFamilyRow]) -> str:
    """The rows as a Markdown table."""
    lines = ["| family | model | crop | TorchScript | max \\|logit\\| | float32 vs float64 "
             "eager | TorchScript max diff | ONNX max diff | ONNX diff / max(1, max \\|logit\\|) "
             "| seconds (both) |",
             "|" + " --- |" * 10]
    for row in rows:
        share = "failed" if row.onnx_max_diff is None else \
            f"{row.onnx_max_diff / max(1.0, row.max_logit):.1e}"
        lines.append(f"| {row.family} | {row.model} | {row.crop} | {row.how} | "
                     f"{row.max_logit:.2g} | {row.float64_diff:.1e} | "
                     f"{_diff(row.torchscript_max_diff)} | {_diff(row.onnx_max_diff)} | "
                     f"{share} | {row.seconds:.1f} |")
    lines.extend(f"\n{row.model} failed: {row.error}" for row in rows if row.error)
    return "\n".join(lines)


def _diff(value: float | None) -> str:
    return "failed" if value is None else f"{value:.1e}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODEL_NAMES),
                        help="comma-separated catalogue models (default: all of them)")
    parser.add_argument("--crop", type=int, default=224, help="crop size in px (default 224)")
    parser.add_argument("--trained-logits", type=float, default=None, metavar="X",
                        help="scale each head so that its largest |logit| is about X, as "
                             "after training (default: leave the random head)")
    parser.add_argument("-o", "--output", help="also write the rows to this JSON file")
    args = parser.parse_args(argv)
    try:
        models = model_names_from_list(args.models)
    except ValueError as exc:
        parser.error(f"--models: {exc}")
    started = time.perf_counter()
    rows = export_catalogue(models, args.crop, on_row=lambda row: print(
        f"{row.model}: {row.how}, {row.seconds:.1f} s", file=sys.stderr, flush=True),
        trained_logits=args.trained_logits)
    print(table(rows))
    print(f"\n{len(rows)} models in {time.perf_counter() - started:.0f} s, torch "
          f"{torch.__version__}")
    if args.output:
        Path(args.output).write_text(json.dumps([asdict(row) for row in rows], indent=2),
                                     encoding="utf-8")
    return 0 if all(not row.error for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
