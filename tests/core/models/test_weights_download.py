"""Downloading weights with progress and a cancel flag, from a local HTTP server on 127.0.0.1
serving a state dict saved here (no internet)."""

from __future__ import annotations

import hashlib
import http.server
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import torchvision

from workbench.core.models import building
from workbench.core.models.building import build_model, imagenet_weights_path
from workbench.core.models.weights_download import (
    DownloadCancelled,
    DownloadError,
    download_file,
)
from workbench.core.runs.config import TrainConfig


class _FileHandler(http.server.BaseHTTPRequestHandler):
    """Serves the server's ``files`` by name, ``pause_s`` between 256 KiB pieces."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        data = self.server.files.get(self.path.lstrip("/"))
        if data is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        for start in range(0, len(data), 256 * 1024):
            try:
                self.wfile.write(data[start:start + 256 * 1024])
            except (BrokenPipeError, ConnectionResetError):
                return
            time.sleep(self.server.pause_s)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def local_server() -> Iterator[http.server.ThreadingHTTPServer]:
    """An HTTP server on 127.0.0.1; tests put bytes in ``server.files[name]``."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _FileHandler)
    server.files = {}
    server.pause_s = 0.0
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def url_of(server: http.server.ThreadingHTTPServer, name: str) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/{name}"


def saved_resnet18(tmp_path: Path) -> tuple[bytes, str]:
    """A resnet18 state dict saved here, and the name torchvision would give it (hash inside)."""
    path = tmp_path / "resnet18.pth"
    torch.save(torchvision.models.resnet18(weights=None).state_dict(), path)
    data = path.read_bytes()
    return data, f"resnet18-{hashlib.sha256(data).hexdigest()[:8]}.pth"


def test_progress_reaches_the_whole_file_and_the_file_appears_at_once(tmp_path, local_server):
    data = bytes(range(256)) * 4096  # 1 MiB
    local_server.files["w.pth"] = data
    seen: list[tuple[int, int | None]] = []
    target = tmp_path / "hub" / "w.pth"

    def on_progress(received: int, total: int | None) -> None:
        seen.append((received, total))
        # Nothing is where the next start would look until the whole file is checked.
        assert not target.exists()

    download_file(url_of(local_server, "w.pth"), target,
                  hashlib.sha256(data).hexdigest()[:8], on_progress=on_progress)

    assert target.read_bytes() == data
    assert seen[0] == (0, len(data)) and seen[-1] == (len(data), len(data))
    assert [r for r, _ in seen] == sorted(r for r, _ in seen) and len(seen) > 2
    assert list(target.parent.iterdir()) == [target]


def test_a_cancel_stops_the_download_and_leaves_no_partial_file(tmp_path, local_server):
    local_server.files["w.pth"] = b"x" * (4 * 1024 * 1024)
    local_server.pause_s = 0.05
    seen: list[int] = []
    with pytest.raises(DownloadCancelled):
        download_file(url_of(local_server, "w.pth"), tmp_path / "hub" / "w.pth",
                      on_progress=lambda received, total: seen.append(received),
                      should_cancel=lambda: len(seen) >= 3)
    assert 0 < seen[-1] < 4 * 1024 * 1024
    assert list((tmp_path / "hub").iterdir()) == []


def test_a_wrong_hash_or_a_missing_file_is_an_error_naming_the_url(tmp_path, local_server):
    local_server.files["w.pth"] = b"not the weights"
    url = url_of(local_server, "w.pth")
    with pytest.raises(DownloadError, match="SHA-256 starts with"):
        download_file(url, tmp_path / "w.pth", "00000000")
    with pytest.raises(DownloadError, match="absent.pth"):
        download_file(url_of(local_server, "absent.pth"), tmp_path / "w.pth")
    assert list(tmp_path.iterdir()) == []


def test_build_model_downloads_imagenet_weights_once_with_progress_then_loads_them(
        tmp_path, local_server, monkeypatch):
    data, name = saved_resnet18(tmp_path)
    local_server.files[name] = data
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch_home"))
    monkeypatch.setattr(building, "imagenet_weights_url", lambda: url_of(local_server, name))
    seen: list[tuple[int, int | None]] = []
    config = TrainConfig(model="resnet18", weights="imagenet", finetune="full")

    model = build_model(config, 3, on_download_progress=lambda r, t: seen.append((r, t)))

    assert imagenet_weights_path() == tmp_path / "torch_home" / "hub" / "checkpoints" / name
    assert imagenet_weights_path().read_bytes() == data
    assert seen[-1] == (len(data), len(data))
    expected = torch.load(tmp_path / "resnet18.pth", weights_only=True)
    torch.testing.assert_close(model.layer4[1].conv2.weight, expected["layer4.1.conv2.weight"])
    seen.clear()
    build_model(config, 3, on_download_progress=lambda r, t: seen.append((r, t)))
    assert seen == []  # the second model comes from the file


def test_a_cancelled_imagenet_download_leaves_nothing_in_the_hub_folder(
        tmp_path, local_server, monkeypatch):
    data, name = saved_resnet18(tmp_path)
    local_server.files[name] = data
    local_server.pause_s = 0.02
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch_home"))
    monkeypatch.setattr(building, "imagenet_weights_url", lambda: url_of(local_server, name))
    seen: list[int] = []
    with pytest.raises(DownloadCancelled):
        build_model(TrainConfig(model="resnet18", weights="imagenet"), 3,
                    on_download_progress=lambda r, t: seen.append(r),
                    should_cancel=lambda: len(seen) >= 4)
    assert list(imagenet_weights_path().parent.iterdir()) == []

