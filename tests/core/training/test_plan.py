"""The run's plan: each decision made once, from the config, the device and torchrun."""

from __future__ import annotations

import torch

from workbench.core.runs.config import TrainConfig
from workbench.core.training.plan import plan_run
from workbench.core.training.precision import CardInfo


def _texts(plan) -> str:
    return " | ".join(text for _, text in plan.notes)


def test_cpu_runs_float32_and_contiguous_whatever_the_config_asks():
    config = TrainConfig(amp=True, channels_last=True)
    plan = plan_run(config, "cpu", distributed=False)
    assert plan.device == "cpu"
    assert not plan.precision.autocast and plan.precision.dtype == torch.float32
    assert not plan.channels_last
    assert "Mixed precision (amp) is a CUDA feature" in _texts(plan)


def test_cuda_gets_mixed_precision_by_card_and_channels_last():
    config = TrainConfig(amp=True, amp_dtype="auto", channels_last=True)
    ampere = plan_run(config, "cuda:0", distributed=False,
                      card=CardInfo((8, 6), "NVIDIA GeForce RTX 3090"))
    assert ampere.precision.dtype == torch.bfloat16 and not ampere.precision.grad_scaler
    assert ampere.channels_last
    assert "Training in mixed bfloat16 precision" in _texts(ampere)
    older = plan_run(config, "cuda:0", distributed=False, card=CardInfo((7, 5), "Tesla T4"))
    assert older.precision.dtype == torch.float16 and older.precision.grad_scaler
    gtx = plan_run(config, "cuda:0", distributed=False,
                   card=CardInfo((7, 5), "NVIDIA GeForce GTX 1650"))
    assert not gtx.precision.autocast and not gtx.precision.grad_scaler
    assert "Training in float32: NVIDIA GeForce GTX 1650" in _texts(gtx)
    # Five crops: a standard crop would add its note about caching only validation features.
    off = plan_run(config.replace(amp=False, channels_last=False, crop_mode="five_crop"),
                   "cuda:0", distributed=False)
    assert not off.precision.autocast and not off.channels_last
    assert off.notes == ()


def test_feature_cache_only_for_a_frozen_backbone_and_both_splits_only_for_fixed_crops():
    five = TrainConfig(finetune="last_layer", cache_features=True, crop_mode="five_crop")
    plan = plan_run(five, "cpu", distributed=False)
    assert plan.cache_features and plan.cache_train_features
    standard = plan_run(five.replace(crop_mode="standard"), "cpu", distributed=False)
    assert standard.cache_features and not standard.cache_train_features
    assert "only validation features are cached" in _texts(standard)
    assert not plan_run(five.replace(finetune="full"), "cpu", False).cache_features
    assert not plan_run(five.replace(cache_features=False), "cpu", False).cache_features


def test_augmentations_keep_training_features_uncached_and_say_why():
    config = TrainConfig(finetune="last_layer", cache_features=True, crop_mode="standard",
                         color_jitter_brightness=0.3, mixup_alpha=0.2)
    plan = plan_run(config, "cpu", distributed=False)
    assert plan.cache_features and not plan.cache_train_features
    assert ("The training augmentations (color_jitter_brightness, mixup_alpha) change the "
            "training pixels every epoch, so only validation features are cached."
            ) in _texts(plan)
    # Five crops with an augmentation (a config validation refuses) never cache stale pixels.
    five = plan_run(config.replace(crop_mode="five_crop"), "cpu", distributed=False)
    assert five.cache_features and not five.cache_train_features
    # Label smoothing changes the loss, not the pixels: five crops' features stay cached.
    smoothing = config.replace(crop_mode="five_crop", color_jitter_brightness=0.0,
                               mixup_alpha=0.0, label_smoothing=0.1)
    assert plan_run(smoothing, "cpu", distributed=False).cache_train_features


def test_torchrun_turns_off_the_single_process_shortcuts_and_says_why():
    config = TrainConfig(finetune="last_layer", cache_features=True, images_on_device=True)
    single = plan_run(config, "cpu", distributed=False)
    assert single.cache_features and single.images_on_device
    shared = plan_run(config, "cpu", distributed=True)
    assert not shared.cache_features and not shared.cache_train_features
    assert not shared.images_on_device
    assert "Feature caching is off under torchrun" in _texts(shared)
    assert "images_on_device applies to single runs" in _texts(shared)
