"""The seeds of an epoch's random draws: the shuffle, the crops and flips, and torch's global
generator (dropout, loader workers' seeds, augmentations drawn in the loader).

Each depends on (run seed, epoch, draw) only, so a resumed run draws what the uninterrupted
run would have drawn. They are hashed rather than added: with ``seed + epoch`` a run of seed 1
shuffled each epoch as the run of seed 0 did one epoch later, so "five seeds" of a benchmark
were largely the same draws shifted by an epoch and their spread understated the real one.
"""

from __future__ import annotations

import hashlib

DRAWS = ("shuffle", "crops", "torch")


def epoch_seed(seed: int, epoch: int, draw: str) -> int:
    """A 63-bit seed for ``draw`` (one of ``DRAWS``) in epoch ``epoch`` (0-based) of a run
    seeded ``seed``; any int ``torch.Generator.manual_seed`` accepts."""
    if draw not in DRAWS:
        raise ValueError(f"unknown draw {draw!r}; one of {', '.join(DRAWS)}")
    digest = hashlib.blake2b(f"{seed}/{epoch}/{draw}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1
