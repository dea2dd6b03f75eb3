"""What both exports (TorchScript and ONNX) share: the error they raise, the tolerance they
verify against, the temporary file the export is written to and its move to the target (with
the mode the umask asks for), the CPU copy of the model they trace, and the check of the file
in a fresh Python process."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from workbench.core.runs.atomic_io import follow_umask

TOLERANCE = 1e-4
FRESH_PROCESS_TIMEOUT_S = 300


class ExportError(RuntimeError):
    """An export could not be written, verified or loaded; the message names the file."""


def temp_file_beside(path: Path) -> Path:
    """An empty temporary file in ``path``'s folder (created if missing), so that the final
    ``os.replace`` stays on one file system."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise ExportError(f"cannot write '{path}': {exc.strerror or exc}") from exc
    os.close(fd)
    return Path(name)


def publish_export(temp: Path, path: Path) -> None:
    """Give the verified ``temp`` file the mode the umask asks for (``mkstemp`` made it 0600)
    and move it to ``path`` in one step."""
    try:
        follow_umask(temp)
        os.replace(temp, path)
    except OSError as exc:
        raise ExportError(f"cannot write '{path}': {exc.strerror or exc}") from exc


def cpu_inference_copy(model: nn.Module) -> nn.Module:
    """A frozen CPU copy in eval mode and the default memory format; ``model`` is untouched."""
    copied = copy.deepcopy(model).cpu().eval()
    copied.requires_grad_(False)
    return copied.to(memory_format=torch.contiguous_format)


def fresh_process_report(script: str, arguments: Sequence[str], folder: str,
                         failure: str) -> dict[str, Any]:
    """Run ``python -c script ARGUMENTS`` in ``folder`` and return the JSON object its last line
    prints: a fresh interpreter has nothing of this process's state (flushed denormals, loaded
    modules), so it sees the file as a user's program will.

    Raises:
        ExportError: the process cannot start, times out, fails (``failure`` says what that
            means, the message ends with its last lines of stderr) or prints no JSON object.
    """
    command = [sys.executable, "-c", script, *arguments]
    try:
        done = subprocess.run(command, cwd=folder, capture_output=True, text=True,
                              timeout=FRESH_PROCESS_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ExportError(f"could not check the export in a fresh Python process: {exc}"
                          ) from exc
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = "\n".join(done.stderr.strip().splitlines()[-5:])
        raise ExportError(f"{failure} (exit code {done.returncode}):\n{tail}")
    try:
        report = json.loads(lines[-1])
        float(report["max_abs_diff"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ExportError(f"unexpected output from the fresh-process check: {lines[-1]!r}"
                          ) from exc
    return report
