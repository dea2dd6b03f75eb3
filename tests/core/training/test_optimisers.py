"""The optimiser the run builds: torch's fused implementation where it can, the same updates."""

from __future__ import annotations

import io

import torch

from workbench.core.models.building import build_model
from workbench.core.runs.config import TrainConfig
from workbench.core.training.optimisers import build_optimizer


def _steps(model: torch.nn.Module, optimizer: torch.optim.Optimizer, count: int) -> None:
    generator = torch.Generator().manual_seed(0)
    torch.manual_seed(1)  # the same dropout masks in both models
    for _ in range(count):
        images = torch.randn(8, 1, 28, 28, generator=generator)
        labels = torch.randint(0, 10, (8,), generator=generator)
        loss = torch.nn.functional.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def _pair(config: TrainConfig) -> tuple[torch.nn.Module, torch.nn.Module]:
    torch.manual_seed(0)
    ours = build_model(config, 10)
    reference = build_model(config, 10)
    reference.load_state_dict(ours.state_dict())
    return ours, reference


def _same_gradient_steps(ours: torch.nn.Module, ours_optimizer: torch.optim.Optimizer,
                         reference: torch.nn.Module, reference_optimizer: torch.optim.Optimizer,
                         count: int) -> None:
    """``count`` steps of both optimisers, each from the gradients of ``ours``' batch.

    Both step from the same gradients so that what is compared is the update alone. Fed from
    their own forward passes, the two models' first 1-ulp difference (fused AdamW rounds in
    another order) changes the next gradients by ~1e-6, and AdamW divides each gradient by its
    running size, so after five steps a weight differs by 1e-5 to 2e-5 depending on how
    torch's thread count orders the convolutions' sums: a comparison of network chaos, not of
    the update.
    """
    generator = torch.Generator().manual_seed(0)
    torch.manual_seed(1)
    for _ in range(count):
        images = torch.randn(8, 1, 28, 28, generator=generator)
        labels = torch.randint(0, 10, (8,), generator=generator)
        ours_optimizer.zero_grad()
        torch.nn.functional.cross_entropy(ours(images), labels).backward()
        for mine, theirs in zip(ours.parameters(), reference.parameters(), strict=True):
            theirs.grad = mine.grad.clone()
        ours_optimizer.step()
        reference_optimizer.step()


def test_sgd_and_adamw_are_fused_on_the_cpu_and_update_as_torch_defaults_do() -> None:
    for name, default in (("sgd", lambda p, c: torch.optim.SGD(
            p, lr=c.lr, momentum=c.momentum, weight_decay=c.weight_decay)),
            ("adamw", lambda p, c: torch.optim.AdamW(p, lr=c.lr, weight_decay=c.weight_decay))):
        config = TrainConfig(model="small_cnn", weights="none", finetune="full", optimizer=name,
                             lr=0.01, momentum=0.9, weight_decay=1e-3)
        ours, reference = _pair(config)
        start = [param.detach().clone() for param in ours.parameters()]
        optimizer = build_optimizer(config, ours.parameters())
        assert optimizer.param_groups[0]["fused"] is True, name
        _same_gradient_steps(ours, optimizer, reference,
                             default(reference.parameters(), config), 5)
        for (key, mine), theirs, before in zip(ours.named_parameters(),
                                               reference.parameters(), start, strict=True):
            # Every tensor moved by at least 0.01 (five steps at lr 0.01); the two updates
            # differ by float rounding alone: measured at most 3e-8 (one ulp of a weight
            # near 0.3) with one or two threads. Weight decay left out would be 5e-5 * |w|.
            assert (mine - before).abs().max() > 0.005, (name, key)
            assert torch.allclose(mine, theirs, rtol=0, atol=1e-6), (name, key)


def test_optimiser_state_saved_by_the_unfused_implementation_resumes_in_the_fused_one() -> None:
    config = TrainConfig(model="small_cnn", weights="none", finetune="full", lr=0.01,
                         momentum=0.9)
    ours, reference = _pair(config)
    older = torch.optim.SGD(reference.parameters(), lr=0.01, momentum=0.9)
    _steps(reference, older, 3)
    ours.load_state_dict(reference.state_dict())
    resumed = build_optimizer(config, ours.parameters())
    saved = io.BytesIO()
    torch.save(older.state_dict(), saved)  # as a checkpoint holds it
    saved.seek(0)
    resumed.load_state_dict(torch.load(saved, weights_only=True))
    _steps(ours, resumed, 2)
    _steps(reference, older, 2)
    for mine, theirs in zip(ours.parameters(), reference.parameters(), strict=True):
        assert torch.allclose(mine, theirs, atol=1e-5)


def test_a_step_skipped_by_the_grad_scaler_leaves_fused_sgd_updating_as_torch_default() -> None:
    """float16 runs skip their first steps when the scaled gradients overflow; fused SGD's
    momentum must then start from the next applied step, as torch's default SGD does."""
    config = TrainConfig(model="small_cnn", weights="none", finetune="full", lr=0.1,
                         momentum=0.9, weight_decay=0.0)
    weights = {}
    for fused in (True, False):
        param = torch.nn.Parameter(torch.ones(4096))
        optimizer = (build_optimizer(config, [param]) if fused else
                     torch.optim.SGD([param], lr=0.1, momentum=0.9))
        assert optimizer.param_groups[0]["fused"] is (True if fused else None)
        scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16)
        for scale in (1e36, 1.0, 1.0):  # the first gradient overflows: that step is skipped
            optimizer.zero_grad()
            scaler.scale((param * scale).sum()).backward()
            scaler.step(optimizer)
            scaler.update()
        weights[fused] = param.detach().clone()
    # Two applied steps of gradient 1: 1 - 0.1 * 1 - 0.1 * (0.9 + 1) = 0.71 everywhere.
    assert torch.allclose(weights[False], torch.full((4096,), 0.71))
    assert torch.allclose(weights[True], weights[False], atol=1e-6)
