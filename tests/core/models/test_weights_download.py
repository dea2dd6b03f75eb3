"""Downloading weights with progress and a cancel flag, from a local HTTP server on 127.0.0.1
serving a state dict saved here (no internet)."""

from __future__ import annotations

import hashlib
import http.server

import pytest
import torch

from workbench.core.models.building import build_model, imagenet_weights_path
from workbench.core.models.weights_download import (
    DownloadCancelled,
    DownloadError,
    download_file,
)
from workbench.core.runs.config import TrainConfig


def url_of(server: http.server.ThreadingHTTPServer, name: str) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/{name}"


def test_progress_reaches_the_whole_file_and_the_file_appears_at_once(tmp_path, local_file_server):
    data = bytes(range(256)) * 4096  # 1 MiB
    local_file_server.files["w.pth"] = data
    seen: list[tuple[int, int | None]] = []
    target = tmp_path / "hub" / "w.pth"

    def on_progress(received: int, total: int | None) -> None:
        seen.append((received, total))
        # Nothing is where the next start would look until the whole file is checked.
        assert not target.exists()

    download_file(url_of(local_file_server, "w.pth"), target,
                  hashlib.sha256(data).hexdigest()[:8], on_progress=on_progress)

    assert target.read_bytes() == data
    assert seen[0] == (0, len(data)) and seen[-1] == (len(data), len(data))
    assert [r for r, _ in seen] == sorted(r for r, _ in seen) and len(seen) > 2
    assert list(target.parent.iterdir()) == [target]


def test_a_cancel_stops_the_download_and_leaves_no_partial_file(tmp_path, local_file_server):
    local_file_server.files["w.pth"] = b"x" * (4 * 1024 * 1024)
    local_file_server.pause_s = 0.05
    seen: list[int] = []
    with pytest.raises(DownloadCancelled):
        download_file(url_of(local_file_server, "w.pth"), tmp_path / "hub" / "w.pth",
                      on_progress=lambda received, total: seen.append(received),
                      should_cancel=lambda: len(seen) >= 3)
    assert 0 < seen[-1] < 4 * 1024 * 1024
    assert list((tmp_path / "hub").iterdir()) == []


def test_a_wrong_hash_or_a_missing_file_is_an_error_naming_the_url(tmp_path, local_file_server):
    local_file_server.files["w.pth"] = b"not the weights"
    url = url_of(local_file_server, "w.pth")
    with pytest.raises(DownloadError, match="SHA-256 starts with"):
        download_file(url, tmp_path / "w.pth", "00000000")
    with pytest.raises(DownloadError, match="absent.pth"):
        download_file(url_of(local_file_server, "absent.pth"), tmp_path / "w.pth")
    assert list(tmp_path.iterdir()) == []


def test_build_model_downloads_imagenet_weights_once_with_progress_then_loads_them(
        tmp_path, served_imagenet_weights):
    seen: list[tuple[int, int | None]] = []
    config = TrainConfig(model="resnet18", weights="imagenet", finetune="full")
    size = len(served_imagenet_weights.data)

    model = build_model(config, 3, on_download_progress=lambda r, t: seen.append((r, t)))

    name = served_imagenet_weights.name
    assert imagenet_weights_path() == tmp_path / "torch_home" / "hub" / "checkpoints" / name
    assert imagenet_weights_path().read_bytes() == served_imagenet_weights.data
    assert seen[0] == (0, size) and seen[-1] == (size, size)
    expected = torch.load(served_imagenet_weights.saved, weights_only=True)
    torch.testing.assert_close(model.layer4[1].conv2.weight, expected["layer4.1.conv2.weight"])
    seen.clear()
    build_model(config, 3, on_download_progress=lambda r, t: seen.append((r, t)))
    assert seen == []  # the second model comes from the file


def test_a_cancelled_imagenet_download_leaves_nothing_in_the_hub_folder(served_imagenet_weights):
    served_imagenet_weights.server.pause_s = 0.02
    seen: list[int] = []
    with pytest.raises(DownloadCancelled):
        build_model(TrainConfig(model="resnet18", weights="imagenet"), 3,
                    on_download_progress=lambda r, t: seen.append(r),
                    should_cancel=lambda: len(seen) >= 4)
    assert list(imagenet_weights_path().parent.iterdir()) == []
