"""Follow a run folder written elsewhere: its config.json and the events in its metrics.jsonl.

A run on a cloud machine writes its folder there; copied back (rsync), synced or mounted (sshfs),
the folder grows here while the run goes on. ``RunFollower.poll`` reads what was appended since
the last call and turns each complete line back into the engine's event dataclasses, so the
desktop app can draw a remote run exactly as it draws a local one.

What copying does to a growing file is tolerated: the last line may be cut short (it is read
when it is complete), the file may not exist yet, rsync replaces the file on every sync (the
part already read is recognised, so nothing is read twice), and a file that was truncated or
rewritten is read again from the start (``FollowBatch.restarted``). A line that is not an event
is reported once, as a warning ``Message``, and skipped.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from workbench.core.runs.events import (
    EpochEnd,
    Event,
    Message,
    RunEnd,
    RunStart,
    event_from_dict,
)
from workbench.core.runs.run_folder import CONFIG_FILE, METRICS_FILE

READ_LIMIT = 1 << 20  # bytes read per poll, so catching up on a long run never blocks for long
TAIL_CHECK = 256  # bytes before the offset compared on every poll, to notice a rewritten file
MAX_REPORTED_BAD_LINES = 5


@dataclass
class FollowBatch:
    """What one ``poll`` found.

    Attributes:
        events: new events, in file order (warnings about unreadable lines among them).
        restarted: the file was truncated or rewritten, so ``events`` start from its beginning
            again and whatever was shown from the old content should be cleared first.
        more_pending: the read limit stopped this poll; poll again soon to catch up.
    """

    events: list[Event] = field(default_factory=list)
    restarted: bool = False
    more_pending: bool = False


@dataclass(frozen=True)
class RunInfo:
    """A run folder's config.json: the config and where it ran."""

    config: dict[str, Any]
    environment: dict[str, Any]
    dataset: dict[str, Any]
    created: str

    def summary(self) -> str:
        """One line: model and hyperparameters, processes and batch, device and GPU."""
        cfg, env = self.config, self.environment
        world = int(env.get("world_size") or 1)
        batch = cfg.get("batch_size", "?")
        if world > 1:
            global_batch = env.get("global_batch_size") or "?"
            batch_text = f"batch {batch} per process x {world} processes = {global_batch}"
        else:
            batch_text = f"batch {batch}"
        device = env.get("device", "?")
        name = env.get("device_name") or ""
        where = f"{world} x {name}" if world > 1 and name else name
        return (f"{cfg.get('model', '?')} ({cfg.get('finetune', '?')}), {cfg.get('epochs', '?')} "
                f"epochs, {cfg.get('optimizer', '?')} lr {cfg.get('lr', '?')}, {batch_text}; "
                f"{device}" + (f" ({where})" if where else "")
                + f"; data {cfg.get('data_root', '?')}")


class RunFollower:
    """Reads a run folder incrementally. No threads: call ``poll`` as often as you like.

    Args:
        run_dir: the run folder (holding, or about to hold, config.json and metrics.jsonl).
        read_limit: at most this many bytes are read per poll (a longer line is still read
            whole).
    """

    def __init__(self, run_dir: str | os.PathLike[str], read_limit: int = READ_LIMIT) -> None:
        self.run_dir = Path(run_dir)
        self.metrics_path = self.run_dir / METRICS_FILE
        self.read_limit = read_limit
        self.offset = 0
        self.lines_read = 0
        self._tail = b""  # the last bytes consumed, to recognise the same content later
        self._remote_run_dir = ""
        self._bad_lines = 0
        self._config_problem = ""

    # ------------------------------------------------------------------ config.json
    def read_info(self) -> RunInfo | None:
        """The run's config and environment; None while config.json is missing or, with
        ``config_problem`` saying why, unreadable."""
        path = self.run_dir / CONFIG_FILE
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(document, dict) or not isinstance(document.get("config"), dict):
                raise ValueError("it has no 'config' object")
        except FileNotFoundError:
            self._config_problem = ""  # not written or not copied yet: nothing is wrong
            return None
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            self._config_problem = f"{path}: cannot read the run's config ({exc})"
            return None
        self._config_problem = ""
        return RunInfo(config=document["config"],
                       environment=_dict(document.get("environment")),
                       dataset=_dict(document.get("dataset")),
                       created=str(document.get("created", "")))

    @property
    def config_problem(self) -> str:
        """Why the last ``read_info`` could not read config.json ('' if it did, or if the
        file is not there yet)."""
        return self._config_problem

    # ------------------------------------------------------------------ metrics.jsonl
    def poll(self) -> FollowBatch:
        """Events appended since the last poll (complete lines only); never raises for the
        file's content or absence."""
        batch = FollowBatch()
        try:
            with open(self.metrics_path, "rb") as handle:
                if not self._same_content(handle):
                    self._restart()
                    batch.restarted = True
                handle.seek(self.offset)
                chunk = _read_whole_lines(handle, self.read_limit)
                batch.more_pending = bool(handle.read(1))
        except FileNotFoundError:
            return batch
        except OSError as exc:
            batch.events.append(Message("warning", f"{self.metrics_path}: cannot read ({exc})"))
            return batch
        end = chunk.rfind(b"\n") + 1  # a line still being written stays for the next poll
        for line in chunk[:end].splitlines():
            self.lines_read += 1
            event = self._parse(line)
            if event is not None:
                batch.events.append(event)
        if end:
            self.offset += end
            self._tail = (self._tail + chunk[:end])[-TAIL_CHECK:]
        return batch

    def _same_content(self, handle: Any) -> bool:
        """True if the bytes already read are still there (appended to or replaced by a longer
        copy, as rsync does); False after a truncation or a rewrite."""
        if not self._tail:
            return True
        start = self.offset - len(self._tail)
        handle.seek(start)
        return handle.read(len(self._tail)) == self._tail

    def _restart(self) -> None:
        self.offset = self.lines_read = 0
        self._tail = b""
        self._bad_lines = 0

    def _parse(self, line: bytes) -> Event | None:
        if not line.strip():
            return None
        try:
            event = event_from_dict(json.loads(line.decode("utf-8")))
        except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
            return self._bad_line(str(exc))
        return self._relocated(event)

    def _bad_line(self, reason: str) -> Message | None:
        self._bad_lines += 1
        if self._bad_lines > MAX_REPORTED_BAD_LINES:
            return None
        more = ("; further unreadable lines are skipped without a word"
                if self._bad_lines == MAX_REPORTED_BAD_LINES else "")
        return Message("warning", f"{self.metrics_path} line {self.lines_read}: not an event "
                                  f"({reason}); skipped{more}")

    def _relocated(self, event: Event) -> Event:
        """Paths inside the run folder as they are here, not on the machine that wrote them."""
        if isinstance(event, RunStart):
            self._remote_run_dir = event.run_dir
            return replace(event, run_dir=str(self.run_dir))
        if isinstance(event, EpochEnd):
            return replace(event, checkpoint_path=self._local(event.checkpoint_path))
        if isinstance(event, RunEnd):
            return replace(event, run_dir=str(self.run_dir),
                            best_model_path=self._local(event.best_model_path),
                            last_checkpoint_path=self._local(event.last_checkpoint_path))
        return event

    def _local(self, path: str) -> str:
        if not path:
            return path
        remote = Path(path)
        if self._remote_run_dir and remote.parent != Path(self._remote_run_dir):
            return path  # not in the run folder: leave it as written
        return str(self.run_dir / remote.name)


def _read_whole_lines(handle: Any, limit: int) -> bytes:
    """Up to ``limit`` bytes; more if that much holds no line end yet (one very long line)."""
    chunk = handle.read(limit)
    while chunk and b"\n" not in chunk:
        more = handle.read(limit)
        if not more:
            break
        chunk += more
    return chunk


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
