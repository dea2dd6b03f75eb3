"""Amounts of memory and disk in the words the run log and the command line use."""

from __future__ import annotations

KIB = 1024
MIB = 1024**2
GIB = 1024**3


def byte_amount(nbytes: int) -> str:
    """1536 -> '2 KiB', 5 * 2**20 -> '5.0 MiB', 3 * 2**30 -> '3.0 GiB'."""
    if nbytes < MIB:
        return f"{nbytes / KIB:,.0f} KiB"
    if nbytes < GIB:
        return f"{nbytes / MIB:,.1f} MiB"
    return f"{nbytes / GIB:,.1f} GiB"
