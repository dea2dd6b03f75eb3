"""Downloading a weights file with progress and a cancel flag, never leaving a partial file.

``torch.hub.download_url_to_file`` shows a terminal progress bar or nothing, and cannot be
stopped; a window needs both a figure to draw and a way to stop. The bytes go to a temp file in
the destination's folder, are checked against the hash prefix in the file's name (torchvision's
convention), fsynced and renamed into place, so a cancel, a dropped connection or a bad hash
leaves nothing where the next start would look.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.request
from collections.abc import Callable
from pathlib import Path

CHUNK_BYTES = 256 * 1024
TIMEOUT_S = 30.0

ProgressCallback = Callable[[int, "int | None"], None]
"""``on_progress(received_bytes, total_bytes)``; total is None when the server does not say."""


class DownloadError(Exception):
    """The download failed; the message names the URL and the reason."""


class DownloadCancelled(Exception):  # noqa: N818 - a request, not an error
    """The download was cancelled on request; nothing was left on disk."""


def download_file(url: str, destination: Path | str, sha256_prefix: str | None = None,
                  on_progress: ProgressCallback | None = None,
                  should_cancel: Callable[[], bool] | None = None,
                  timeout_s: float = TIMEOUT_S) -> Path:
    """Download ``url`` (http, https or file) to ``destination`` in one atomic step.

    Args:
        url: where the file is.
        destination: the file to create; its folder is created when missing.
        sha256_prefix: the start of the file's SHA-256 in hex; None skips the check.
        on_progress: called before the first chunk and after every chunk.
        should_cancel: asked before every chunk; True stops the download.
        timeout_s: how long the connection may stay silent.

    Returns:
        ``destination``.

    Raises:
        DownloadCancelled: ``should_cancel`` said so; no file was written.
        DownloadError: the server, the connection, the disk or the hash failed; no file was
            written.
    """
    destination = Path(destination)
    try:
        destination.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=f".{destination.name}.", suffix=".partial",
                                    dir=destination.parent)
    except OSError as exc:
        raise DownloadError(f"cannot write into '{destination.parent}' ({exc})") from exc
    try:
        with os.fdopen(fd, "wb") as out:
            digest = _copy_url(url, out, on_progress, should_cancel, timeout_s)
            out.flush()
            os.fsync(out.fileno())
        if sha256_prefix and not digest.startswith(sha256_prefix.lower()):
            found = digest[:len(sha256_prefix)]
            raise DownloadError(f"{url}: the file's SHA-256 starts with {found}, not "
                                f"{sha256_prefix}; it is damaged or another file")
        os.replace(temp, destination)
    except BaseException:
        _remove(temp)
        raise
    return destination


def _copy_url(url: str, out: object, on_progress: ProgressCallback | None,
              should_cancel: Callable[[], bool] | None, timeout_s: float) -> str:
    """Stream ``url`` into ``out``; the SHA-256 of what was written, in hex."""
    digest = hashlib.sha256()
    received = 0
    try:
        request = urllib.request.Request(url, headers={"User-Agent": "workbench"})
        with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310
            length = response.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
            if on_progress is not None:
                on_progress(0, total)
            while True:
                if should_cancel is not None and should_cancel():
                    raise DownloadCancelled(f"the download of {url} was cancelled")
                chunk = response.read(CHUNK_BYTES)
                if not chunk:
                    break
                out.write(chunk)
                digest.update(chunk)
                received += len(chunk)
                if on_progress is not None:
                    on_progress(received, total)
    except DownloadCancelled:
        raise
    except OSError as exc:  # URLError, timeouts, resets and a full disk are all OSErrors
        raise DownloadError(f"{url}: {getattr(exc, 'reason', None) or exc}") from exc
    if total is not None and received != total:
        raise DownloadError(f"{url}: the connection ended after {received:,} of {total:,} bytes")
    return digest.hexdigest()


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
