"""Five and ten crops in real runs: loss and accuracy count each original image once, in the
training loop and in evaluation, with both crop strategies."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torchvision.transforms.v2 import functional as TF

from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.data.image_decoding import decode_file
from workbench.core.data.transforms import normalization_for
from workbench.core.models.building import build_model
from workbench.core.models.checkpoint_format import load_checkpoint
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.events import Callback, EpochEnd
from workbench.core.training.engine import train

CLASSES = ("circle", "cross", "square", "triangle")


@pytest.fixture(scope="module")
def same_images_in_train_and_val(tmp_path_factory) -> Path:
    """val/ is a copy of train/: with a frozen model both loops then see the same images."""
    root = write_shape_dataset(tmp_path_factory.mktemp("crops"), classes=CLASSES, per_class=5,
                               size=(48, 48), layout="train_val", val_per_class=1, seed=4)
    shutil.rmtree(root / "val")
    shutil.copytree(root / "train", root / "val")
    return root


@pytest.fixture(scope="module")
def partly_trained_weights(same_images_in_train_and_val, tmp_path_factory) -> str:
    """A small_cnn trained a little, so that the crops of one image do not all agree (an
    untrained one calls everything the same class, per crop and per image alike). Tiny
    runs can still end that way, so the first seed whose model tells the two apart wins."""
    folder = tmp_path_factory.mktemp("pretrain")
    for seed in range(3, 9):
        end = train(TrainConfig(
            data_root=str(same_images_in_train_and_val), model="small_cnn", weights="none",
            finetune="full", crop_mode="standard", resize_size=48, crop_size=20,
            batch_size=10, epochs=5, optimizer="adamw", lr=3e-3, scheduler="none",
            workers=0, output_dir=str(folder), cache_images=False, seed=seed,
        ))
        assert end.status == "completed"
        weights = folder / f"weights-{seed}.pt"
        torch.save(load_checkpoint(end.last_checkpoint_path)["model"], weights)
        config = TrainConfig(model="small_cnn", weights="none", resize_size=48, crop_size=20)
        if all(_tells_crops_from_images(config.replace(crop_mode=mode), end.last_checkpoint_path,
                                        same_images_in_train_and_val)
               for mode in ("five_crop", "ten_crop")):
            return str(weights)
    raise AssertionError("no seed trained a model whose crops disagree")


def _tells_crops_from_images(config: TrainConfig, checkpoint: str, root: Path) -> bool:
    figures = _by_hand(config, checkpoint, root)
    return abs(figures["per_crop"] - figures["per_image"]) > 0.02


class LastEpoch(Callback):
    def __init__(self) -> None:
        self.epoch: EpochEnd | None = None

    def on_epoch_end(self, event: EpochEnd) -> None:
        self.epoch = event


def _by_hand(config: TrainConfig, checkpoint: str, root: Path) -> dict[str, float]:
    """Loss and accuracy of the saved model, computed here per image and per crop."""
    model = build_model(config, len(CLASSES))
    model.load_state_dict(load_checkpoint(checkpoint)["model"])
    model.eval()
    mean, std = normalization_for(config)
    crop = TF.five_crop if config.crop_mode == "five_crop" else TF.ten_crop
    image_logits, labels = [], []
    for label, name in enumerate(CLASSES):
        for path in sorted((root / "val" / name).glob("*.png")):
            pixels = torch.from_numpy(decode_file(str(path), config.resize_size, grayscale=True))
            crops = torch.stack(crop(pixels, [config.crop_size, config.crop_size]))
            with torch.no_grad():
                image_logits.append(model((crops.float() / 255 - mean[0]) / std[0]))
            labels.append(label)
    logits = torch.stack(image_logits)  # [images, crops, classes]
    target = torch.tensor(labels)
    crops_per_image = logits.shape[1]
    mean_logits = logits.mean(dim=1)
    if config.crop_strategy == "repeat_labels":
        loss = F.cross_entropy(logits.flatten(0, 1), target.repeat_interleave(crops_per_image))
    else:
        loss = F.cross_entropy(mean_logits, target)
    per_crop = logits.argmax(dim=2) == target[:, None]
    return {
        "loss": float(loss),
        "per_image": float((mean_logits.argmax(dim=1) == target).float().mean()),
        "per_crop": float(per_crop.float().mean()),
        "crops": crops_per_image,
    }


@pytest.mark.parametrize("strategy", ["repeat_labels", "average_logits"])
@pytest.mark.parametrize("crop_mode", ["five_crop", "ten_crop"])
def test_loss_and_accuracy_count_each_image_once(same_images_in_train_and_val,
                                                 partly_trained_weights, tmp_path, crop_mode,
                                                 strategy):
    # last_layer keeps the backbone in eval mode and an lr this small leaves the head as it
    # was: the training loop and the evaluation judge the same model on the same images.
    config = TrainConfig(
        data_root=str(same_images_in_train_and_val), model="small_cnn", weights="file",
        weights_file=partly_trained_weights, finetune="last_layer", cache_features=False,
        crop_mode=crop_mode,
        crop_strategy=strategy, resize_size=48, crop_size=20, batch_size=6, epochs=1,
        optimizer="sgd", lr=1e-9, momentum=0.0, weight_decay=0.0, scheduler="none",
        workers=0, output_dir=str(tmp_path / "runs"), cache_images=False, seed=11,
    )
    recorder = LastEpoch()
    end = train(config, recorder)
    assert end.status == "completed"
    epoch = recorder.epoch
    expected = _by_hand(config, end.last_checkpoint_path, same_images_in_train_and_val)

    assert expected["crops"] == (5 if crop_mode == "five_crop" else 10)
    # The check can tell: counted per crop, this model's accuracy would be another number.
    assert abs(expected["per_crop"] - expected["per_image"]) > 0.02
    assert epoch.val_accuracy == pytest.approx(expected["per_image"], abs=1e-6)
    assert epoch.train_accuracy == pytest.approx(expected["per_image"], abs=1e-6)
    assert epoch.val_loss == pytest.approx(expected["loss"], rel=1e-4)
    assert epoch.train_loss == pytest.approx(expected["loss"], rel=1e-4)
    assert sum(map(sum, epoch.confusion)) == 20  # every image once, not once per crop
