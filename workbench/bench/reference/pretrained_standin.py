"""Fine-tuning measured on features pretrained here: a stand-in for ImageNet weights.

ImageNet weights cannot be downloaded on every machine, which leaves the fine-tuning recipes
(``model_catalog.RECIPES``), ``last_layer`` / ``full`` / ``head_then_full`` and their defaults
unmeasured with pretrained features. This bench makes pretrained features here and measures
on them:

- Step A trains a model (resnet18 unless ``--model`` names another: mobilenet_v3_small,
  convnext_tiny) from random weights, once, through Workbench's engine on real clip art
  (Debian's ``openclipart-png``, ``/usr/share/openclipart/png``): the categories with the most
  images, one class a category, each PNG decoded by Workbench's own decoder (transparency
  composited over its mid grey) to a small RGB PNG. Its backbone (every tensor but the
  classifier head, wherever the family keeps it: ``fc``, ``classifier.3``, ``classifier.2``) is
  saved as a plain state dict, the file a user gives as weights 'file'.
- Step B fine-tunes from that file on *other* real sets (``real_image_sets``: digits64, faces,
  and digits64 with 15 images a class), the config built as ``workbench train --weights file``
  builds it (the family's fine-tuning recipe), with each fine-tune mode and against the
  from-scratch recipe, the fine-tuning recipe's learning rate x3 and /3 and its other schedule
  (cosine for a step recipe, step for a cosine one), for several seeds.
  A row from random weights (the app's from-scratch defaults) shows what the features give.

These are features pretrained here on clip art, not ImageNet's: a small, different source
domain, so the table says which recipe and mode suit *some* pretrained features on small real
sets, not what ImageNet weights would do.

    python -m workbench.bench.reference.pretrained_standin --out /tmp/standin
    python -m workbench.bench.reference.pretrained_standin --out /tmp/standin_mnv3 \
        --model mobilenet_v3_small
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image

from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import Callback
from workbench.core.training.engine import train

CLIPART_ROOT = Path("/usr/share/openclipart/png")
# "unsorted" is a category of the package but not a class of anything.
_NOT_CLASSES = {"unsorted"}
# The families this bench has pretrained (one from each recipe the catalogue has).
STANDIN_MODELS = ("resnet18", "mobilenet_v3_small", "convnext_tiny")


@dataclass(frozen=True)
class StandinWorkload:
    """The model and the sizes of both steps."""

    model: str = "resnet18"
    classes: int = 10            # clip art categories (the largest)
    pretrain_size: int = 36      # decoded shorter side of the clip art PNGs
    pretrain_crop: int = 32
    pretrain_epochs: int = 8
    finetune_epochs: int = 4
    resize: int = 36
    crop: int = 32
    seeds: tuple[int, ...] = (0, 1, 2)
    # (row name, real set, train per class, val per class)
    sets: tuple[tuple[str, str, int | None, int | None], ...] = (
        ("digits64-15", "digits64", 15, 40),
        ("digits64-60", "digits64", 60, 40),
        ("faces", "faces", None, None),
    )


FULL = StandinWorkload()
QUICK = StandinWorkload(classes=3, pretrain_epochs=1, finetune_epochs=2, seeds=(0,),
                        sets=(("digits64-15", "digits64", 15, 10),))


# ---------------------------------------------------------------------- step A: pretraining
def largest_clipart_categories(root: Path = CLIPART_ROOT, count: int = 10) -> list[Path]:
    """The ``count`` category folders under ``root`` holding the most PNGs (ties by name)."""
    if not root.is_dir():
        raise FileNotFoundError(f"clip art folder '{root}' does not exist (Debian package "
                                "openclipart-png)")
    folders = [f for f in sorted(root.iterdir()) if f.is_dir() and f.name not in _NOT_CLASSES]
    folders.sort(key=lambda f: -len(list(f.rglob("*.png"))))
    return folders[:count]


def write_clipart_set(out: Path, size: int, count: int = 10, val_share: float = 0.2,
                      root: Path = CLIPART_ROOT, seed: int = 0) -> Path:
    """``out/train|val/<category>/*.png``: each clip art PNG decoded by Workbench's decoder
    (transparency over its grey, shorter side ``size``), a seeded ``val_share`` held out."""
    from workbench.core.data.image_decoding import ImageDecodeError, decode_file

    rng = np.random.default_rng(seed)
    for folder in largest_clipart_categories(root, count):
        paths = sorted(folder.rglob("*.png"))
        order = rng.permutation(len(paths))
        held = max(1, round(len(paths) * val_share))
        for rank, index in enumerate(order):
            try:
                pixels = decode_file(str(paths[index]), size)
            except ImageDecodeError:
                continue
            split = "val" if rank < held else "train"
            target = out / split / folder.name
            target.mkdir(parents=True, exist_ok=True)
            Image.fromarray(np.ascontiguousarray(pixels.transpose(1, 2, 0))).save(
                target / f"{folder.name}_{rank:05d}.png")
    return out


def pretrain_config(data: Path, output: Path, work: StandinWorkload, seed: int = 0
                    ) -> TrainConfig:
    """``work.model`` from random weights with the app's from-scratch recipe for it."""
    from workbench.core.runs.model_defaults import apply_model_defaults, settings_for_weights

    given: dict[str, Any] = dict(
        data_root=str(data), model=work.model, weights="none", finetune="full",
        resize_size=work.pretrain_size, crop_size=work.pretrain_crop,
        epochs=work.pretrain_epochs, batch_size=32, seed=seed, workers=0, amp=False,
        output_dir=str(output / "runs"), cache_dir=str(output / "cache"), device="cpu")
    config = apply_model_defaults(TrainConfig().replace(**given), set(given))
    return settings_for_weights(config, set(given))[0]


def head_prefix(model: str) -> str:
    """The state-dict prefix of torchvision model ``model``'s classifier head ('fc.',
    'classifier.3.', ...), as the app's head locator finds it."""
    import torchvision

    from workbench.core.models.heads import head_state_prefix

    return head_state_prefix(torchvision.models.get_model(model, weights=None))


def save_backbone(checkpoint: str | Path, weights_file: Path, model: str = "resnet18") -> Path:
    """Save the backbone of a Workbench model/checkpoint file of torchvision model ``model``
    (every tensor but its classifier head) as a plain state dict at ``weights_file``."""
    from workbench.core.models.building import _find_state_dict, strip_wrapper_prefixes

    loaded = torch.load(checkpoint, map_location="cpu", weights_only=True)
    state = strip_wrapper_prefixes(_find_state_dict(loaded, Path(checkpoint)))
    head = head_prefix(model)
    backbone = {k: v.clone() for k, v in state.items() if not k.startswith(head)}
    weights_file.parent.mkdir(parents=True, exist_ok=True)
    torch.save(backbone, weights_file)
    return weights_file


def pretrain(data: Path, output: Path, work: StandinWorkload) -> tuple[Path, float, float]:
    """Step A: (weights file, best val accuracy, seconds)."""
    started = time.perf_counter()
    end = train(pretrain_config(data, output, work), Callback())
    if end.status != "completed":
        raise RuntimeError(f"pretraining {end.status}: {end.error}")
    path = save_backbone(end.best_model_path or end.last_checkpoint_path,
                         output / f"standin_{work.model}_backbone.pt", work.model)
    return path, end.best_val_accuracy, time.perf_counter() - started


# ---------------------------------------------------------------------- step B: fine-tuning
def finetune_variants(model: str = "resnet18") -> list[tuple[str, str, str, dict[str, Any]]]:
    """(row label, weights, finetune mode, recipe overrides) of every row of a set."""
    from workbench.core.runs.model_catalog import family_recipe, scratch_recipe

    recipe = family_recipe(model)
    # The from-scratch recipe where the family has its own (ConvNeXt's is its fine-tuning
    # recipe, already a row), every field of it set.
    own_scratch = scratch_recipe(model)
    scratch = {"momentum": 0.9, "lr_step_size": 7, "lr_gamma": 0.1, **(own_scratch or {})}
    # The fine-tuning recipe's other schedule: cosine over the run for a step recipe, the
    # catalogue's step (lr / 10 after 7 epochs) for a cosine one.
    if recipe["scheduler"] == "step":
        other_schedule = ("full / ft recipe, cosine", {"scheduler": "cosine"})
    else:
        other_schedule = ("full / ft recipe, step", {"scheduler": "step", "lr_step_size": 7,
                                                     "lr_gamma": 0.1})
    return [
        ("last_layer / ft recipe", "file", "last_layer", {}),
        ("full / ft recipe", "file", "full", {}),
        ("head_then_full / ft recipe", "file", "head_then_full", {}),
        ("full / ft lr x3", "file", "full", {"lr": recipe["lr"] * 3}),
        ("full / ft lr /3", "file", "full", {"lr": recipe["lr"] / 3}),
        (other_schedule[0], "file", "full", other_schedule[1]),
        *([("full / scratch recipe", "file", "full", scratch)] if own_scratch else []),
        ("random init / scratch defaults", "none", "full", {}),
    ]


def finetune_config(data: Path, output: Path, weights_file: Path | None, work: StandinWorkload,
                    seed: int, finetune: str = "last_layer", weights: str = "file",
                    overrides: dict[str, Any] | None = None) -> TrainConfig:
    """The config ``workbench train --model M --weights file --weights-file F
    --finetune MODE`` builds at this bench's sizes (the family's fine-tuning recipe), with
    ``overrides`` on top."""
    from workbench.core.runs.model_defaults import apply_model_defaults, settings_for_weights

    given: dict[str, Any] = dict(
        data_root=str(data), model=work.model, weights=weights, finetune=finetune,
        weights_file=str(weights_file) if weights == "file" and weights_file else "",
        resize_size=work.resize, crop_size=work.crop, epochs=work.finetune_epochs,
        batch_size=32, seed=seed, workers=0, amp=False, output_dir=str(output / "runs"),
        cache_dir=str(output / "cache"), device="cpu")
    config = apply_model_defaults(TrainConfig().replace(**given), set(given))
    config = settings_for_weights(config, set(given))[0]
    return config.replace(**(overrides or {}))


def finetune_run(config: TrainConfig, keep: bool = True) -> tuple[Any, float]:
    """(the run's end, seconds) of one run through the engine; without ``keep`` its run
    folder (checkpoints of 10-100 MB each) is deleted once its figures are read."""
    started = time.perf_counter()
    end = train(config, Callback())
    seconds = time.perf_counter() - started
    if end.status != "completed":
        raise RuntimeError(f"fine-tuning {end.status}: {end.error}")
    if not keep and end.run_dir:
        shutil.rmtree(end.run_dir, ignore_errors=True)
    return end, seconds


@dataclass
class Row:
    set_name: str
    variant: str
    accuracies: list[float]
    seconds: float

    def line(self) -> str:
        mean = statistics.fmean(self.accuracies)
        spread = max(self.accuracies) - min(self.accuracies)
        return (f"| {self.set_name} | {self.variant} | {mean:.3f} | {spread:.3f} | "
                f"{self.seconds:.0f} |")


def finetune_table(weights_file: Path, output: Path, work: StandinWorkload,
                   echo: Any = print, variants: list[str] | None = None) -> list[Row]:
    """Step B: every variant (or those labelled in ``variants``) on every set, each over
    ``work.seeds`` (seeds alternate)."""
    from workbench.bench.real_image_sets import write_real_set

    chosen = [row for row in finetune_variants(work.model)
              if variants is None or row[0] in variants]
    rows: list[Row] = []
    for set_name, real_set, per_class, val_per_class in work.sets:
        data = write_real_set(real_set, output / "sets" / set_name, per_class, val_per_class)
        by_variant = {label: Row(set_name, label, [], 0.0) for label, *_ in chosen}
        for seed in work.seeds:
            for label, weights, mode, overrides in chosen:
                config = finetune_config(data, output / set_name, weights_file, work, seed,
                                         mode, weights, overrides)
                # 72 kept runs of resnet18 filled 6 GB: the table needs only their figures.
                end, seconds = finetune_run(config, keep=False)
                row = by_variant[label]
                row.accuracies.append(end.best_val_accuracy)
                row.seconds += seconds
                echo(f"  {set_name} seed {seed} {label}: {end.best_val_accuracy:.3f} "
                     f"({seconds:.0f} s)", flush=True)
        for row in by_variant.values():
            row.seconds /= len(work.seeds)
            echo(row.line(), flush=True)
        rows.extend(by_variant.values())
    return rows


def batch_norm_while_stale(random_weights_only: bool = False) -> None:
    """Put back, in this process, an earlier rule for the BatchNorm statistics recomputed
    before validation: only while a layer that trains still holds more than 1% of its start
    (``(1 - momentum) ** steps``), whatever the weights (the rule of 7 December 2026, until
    the digit scans showed the averages lag the weights too), and with
    ``random_weights_only`` only for a network from random weights (the rule before it). For
    the paired rows that changed them."""
    from workbench.core.training.batch_norm_statistics import batch_norm_layers
    from workbench.core.training.session import TrainingSession

    recompute = TrainingSession._refresh_batch_norm_statistics

    def earlier_rule(session: TrainingSession, epoch: int) -> None:
        steps = (epoch + 1) * session._steps_per_epoch()
        left = max(((1.0 - layer.momentum) ** steps for layer in batch_norm_layers(session.model)
                    if layer.momentum is not None), default=0.0)
        if left > 0.01 and (session.config.weights == "none" or not random_weights_only):
            recompute(session, epoch)

    TrainingSession._refresh_batch_norm_statistics = earlier_rule  # type: ignore


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for sets, runs, file")
    parser.add_argument("--quick", action="store_true", help="a tiny run (checks it works)")
    parser.add_argument("--weights-file", type=Path, help="skip step A; use this backbone file")
    parser.add_argument("--finetune-epochs", type=int, help="epochs of each step B run")
    parser.add_argument("--sets", help="step B's sets, in order (default: all of them)")
    parser.add_argument("--model", choices=STANDIN_MODELS, default="resnet18",
                        help="the model pretrained and fine-tuned (default resnet18)")
    parser.add_argument("--variants", help="step B's rows to run, their labels separated by "
                        "';' (default: all of them)")
    parser.add_argument("--batch-norm-random-only", action="store_true",
                        help="recompute BatchNorm statistics before validation for random "
                        "weights only, while they hold more than 1%% of their start: the rule "
                        "before 7 December 2026 (its paired rows)")
    parser.add_argument("--batch-norm-while-stale", action="store_true",
                        help="recompute BatchNorm statistics before validation only while they "
                        "hold more than 1%% of their start: the rule of 7 December 2026")
    args = parser.parse_args(argv)
    if args.batch_norm_random_only or args.batch_norm_while_stale:
        batch_norm_while_stale(random_weights_only=args.batch_norm_random_only)
    work = dataclasses.replace(QUICK if args.quick else FULL, model=args.model)
    labels = [row[0] for row in finetune_variants(args.model)]
    variants = None
    if args.variants:
        variants = [label.strip() for label in args.variants.split(";")]
        unknown = [label for label in variants if label not in labels]
        if unknown:
            parser.error(f"unknown variant(s) {', '.join(unknown)}; choose from "
                         f"{'; '.join(labels)}")
    if args.finetune_epochs:
        work = dataclasses.replace(work, finetune_epochs=args.finetune_epochs)
    if args.sets:
        chosen = [name.strip() for name in args.sets.split(",")]
        known = {row[0]: row for row in FULL.sets}
        unknown = [name for name in chosen if name not in known]
        if unknown:
            parser.error(f"unknown set(s) {', '.join(unknown)}; choose from {', '.join(known)}")
        work = dataclasses.replace(work, sets=tuple(known[name] for name in chosen))
    torch.set_num_threads(1)
    if args.weights_file:
        weights_file = args.weights_file
    else:
        clipart = write_clipart_set(args.out / "clipart", work.pretrain_size, work.classes)
        weights_file, accuracy, seconds = pretrain(clipart, args.out / "pretrain", work)
        print(f"step A: {work.model} on {work.classes} clip art categories at "
              f"{work.pretrain_crop} px, {work.pretrain_epochs} epochs: best val accuracy "
              f"{accuracy:.3f}, {seconds:.0f} s -> {weights_file}", flush=True)
    print("| set | mode / recipe | mean best val acc | spread | seconds a run |")
    print("|---|---|---|---|---|")
    rows = finetune_table(weights_file, args.out / "finetune", work, variants=variants)
    print("\n".join(row.line() for row in rows))


if __name__ == "__main__":
    main()
