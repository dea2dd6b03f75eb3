"""Shared fixtures: tiny generated image folders on disk, CPU only."""

from __future__ import annotations

import faulthandler
import hashlib
import http.server
import os
import random
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

EXIT_LIMIT_S = 300


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config) -> None:
    """The tests' limit (pytest-timeout) ends with the last test; what runs after it, the Qt
    application's and the thread pool's teardown at exit, gets EXIT_LIMIT_S too: past that
    every thread's stack is printed and the process exits with status 1, rather than hold a
    CI run until its own limit. Only where pytest is the program: a tool that runs the tests
    in its own process and goes on (mutmut) is not ended."""
    program = Path(sys.argv[0]) if sys.argv and sys.argv[0] else Path()
    if program.name in ("pytest", "py.test") or program.parent.name == "pytest":
        faulthandler.dump_traceback_later(EXIT_LIMIT_S, exit=True, file=sys.__stderr__)


@pytest.fixture(autouse=True, scope="session")
def _image_cache_of_the_session():
    """Runs that leave cache_dir empty cache into a folder of this test session, not into the
    user's own image cache (child processes inherit the variable)."""
    folder = tempfile.mkdtemp(prefix="workbench-test-image-cache-")
    previous = os.environ.get("WORKBENCH_CACHE_DIR")
    os.environ["WORKBENCH_CACHE_DIR"] = folder
    yield folder
    if previous is None:
        os.environ.pop("WORKBENCH_CACHE_DIR", None)
    else:
        os.environ["WORKBENCH_CACHE_DIR"] = previous
    shutil.rmtree(folder, ignore_errors=True)


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
def local_file_server() -> Iterator[http.server.ThreadingHTTPServer]:
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


@dataclass
class ServedWeights:
    """A resnet18 state dict served as the ImageNet weights; see ``served_imagenet_weights``."""

    server: http.server.ThreadingHTTPServer
    data: bytes
    name: str
    saved: Path  # the same state dict on disk, to compare with what was loaded


@pytest.fixture()
def served_imagenet_weights(tmp_path: Path, local_file_server, monkeypatch) -> ServedWeights:
    """A resnet18 state dict saved here and served on 127.0.0.1 under a torchvision-style name
    (its own hash inside); TORCH_HOME in tmp_path and the weights' URL pointing at the server:
    only where the file comes from is replaced, the download, hash check and loading are real."""
    import torch
    import torchvision

    from workbench.core.models import building

    saved = tmp_path / "resnet18_state_dict.pth"
    torch.save(torchvision.models.resnet18(weights=None).state_dict(), saved)
    data = saved.read_bytes()
    name = f"resnet18-{hashlib.sha256(data).hexdigest()[:8]}.pth"
    local_file_server.files[name] = data
    url = f"http://127.0.0.1:{local_file_server.server_address[1]}/{name}"
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch_home"))
    monkeypatch.setattr(building, "imagenet_weights_url", lambda _model="resnet18": url)
    return ServedWeights(local_file_server, data, name, saved)


@pytest.fixture()
def planted_imagenet_weights(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A seeded random resnet18 state dict where the ImageNet file is expected (TORCH_HOME in
    tmp_path), so resnet18's default weights 'imagenet' load without a download."""
    return _plant_imagenet_weights("resnet18", tmp_path, monkeypatch)


@pytest.fixture()
def plant_imagenet_weights(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                           ) -> Callable[[str], Path]:
    """``plant(model)``: ``model``'s seeded constructor weights where its ImageNet file is
    expected (TORCH_HOME in tmp_path), so its default weights 'imagenet' load offline."""
    return lambda model, calibrate_at=None: _plant_imagenet_weights(model, tmp_path, monkeypatch,
                                                                     calibrate_at)


def _plant_imagenet_weights(model: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                            calibrate_at: int | None = None) -> Path:
    import torch
    import torchvision

    from workbench.core.models.building import imagenet_weights_path

    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch_home"))
    monkeypatch.setattr(torch.hub, "_hub_dir", None)  # get_dir() follows TORCH_HOME
    path = imagenet_weights_path(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    network = torchvision.models.get_model(model, weights=None)
    if calibrate_at is not None:
        calibrate_batch_norm(network, calibrate_at)
    torch.save(network.state_dict(), path)
    return path


def calibrate_batch_norm(network, size: int, batches: int = 8, batch_size: int = 32) -> None:
    """Recompute ``network``'s BatchNorm running statistics on generated ``size`` px tiles of
    random colours (ImageNet-normalised, as training feeds them), the way a pretrained
    network's statistics come from its own images. Only the BatchNorm layers run in training
    mode (dropout and stochastic depth stay off); ``momentum=None`` averages all batches.

    Why: with constructor statistics (mean 0, variance 1) the pooled features of a frozen
    random backbone shrink with depth (RMS at 32 px, seed 0: MobileNetV3-small 2e-10,
    EfficientNet-B0 4e-15, ShuffleNetV2 4e-6, RegNetY-400MF 0.06), so a new head sees
    nothing. Statistics from too few images blow features up instead: at 32 px the deepest
    layers are 1x1, so each batch gives one value a channel, and 64 images left EfficientNet-B0
    at RMS 31 and RegNetY-400MF at 8.7; 256 images bring them to 4.4 and 5.3.
    """
    import numpy as np
    import torch

    norms = [m for m in network.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None
    network.eval()
    for norm in norms:
        norm.train()
    rng = random.Random(1)
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
    with torch.no_grad():
        for _ in range(batches):
            tiles = [np.asarray(draw_colour_tile(tuple(rng.randint(0, 255) for _ in range(3)),
                                                 size, rng), dtype=np.float32) / 255
                     for _ in range(batch_size)]
            network((torch.from_numpy(np.stack(tiles)).permute(0, 3, 1, 2) - mean) / std)
    for norm in norms:
        norm.momentum = 0.1
    network.eval()


# Tile colours of the resnet18 set: a frozen network's features tell colours apart.
TILE_COLOURS = ((210, 50, 40), (40, 170, 60), (50, 70, 220))


def draw_colour_tile(colour: tuple[int, int, int], size: int, rng: random.Random) -> Any:
    """A noisy tile of ``colour`` with a disc of a random colour somewhere on it (a PIL image)."""
    from PIL import Image

    tile = tuple(min(255, max(0, v + rng.randint(-30, 30))) for v in colour)
    image = Image.new("RGB", (size, size), tile)
    disc = Image.new("RGB", (size, size), tuple(rng.randint(0, 255) for _ in range(3)))
    mask = Image.new("L", (size, size), 0)
    radius = rng.randint(size // 10, size // 4)
    x, y = rng.randint(size // 4, 3 * size // 4), rng.randint(size // 4, 3 * size // 4)
    mask.paste(255, (x - radius, y - radius, x + radius, y + radius))
    image.paste(disc, (0, 0), mask)
    return Image.blend(image, Image.effect_noise((size, size), 40).convert("RGB"), 0.2)
