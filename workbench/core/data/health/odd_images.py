"""Images that decode but are odd: near-blank, very dark or bright, blurry, tiny, extremely
elongated, grey in a colour dataset; and how the classes are balanced, in plain words."""

from __future__ import annotations

from collections.abc import Sequence

from workbench.core.data.health.findings import Finding, FindingItem
from workbench.core.data.health.image_facts import ImageFacts

# Luminance standard deviation (0..255) below which an image is one colour and some noise.
NEAR_BLANK_STD = 3.0
# Mean luminance below / above which an image is very dark / very bright.
DARK_MEAN = 30.0
BRIGHT_MEAN = 225.0
# Laplacian variance over luminance variance, measured at 64 px: generated scenes score
# 0.3..15, the same under a Gaussian blur of a twentieth of their size below 0.05.
BLURRY_SHARPNESS = 0.08
# A shorter side below this many pixels is tiny.
TINY_SIDE = 32
# Sides differing this many times or more.
EXTREME_ASPECT = 4.0
# Grey images are odd when at most this share of a dataset is grey.
GREYSCALE_MINORITY = 0.1
# Largest over smallest class at which the balance verdict says "imbalanced".
IMBALANCED_RATIO = 3.0


def odd_image_findings(facts: Sequence[ImageFacts]) -> list[Finding]:
    """One finding a kind of oddness, with the measured figure as the reason."""
    readable = [f for f in facts if f.error is None]
    items: dict[str, list[FindingItem]] = {kind: [] for kind in (
        "near_blank", "dark", "bright", "blurry", "tiny", "extreme_aspect", "grayscale")}
    grey_share = sum(f.grayscale for f in readable) / max(1, len(readable))
    for item in readable:
        for kind, reason in _oddities(item, grey_share):
            items[kind].append(FindingItem((item.path,), reason, (item.path,)))
    return [Finding(kind, tuple(found)) for kind, found in items.items() if found]


def _oddities(item: ImageFacts, grey_share: float) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    # A flat black or white frame is reported as dark or bright: the likelier cause.
    blank = item.std < NEAR_BLANK_STD
    if item.mean < DARK_MEAN:
        found.append(("dark", f"mean brightness {item.mean:.0f} of 255 (below {DARK_MEAN:g})"))
    elif item.mean > BRIGHT_MEAN:
        found.append(("bright", f"mean brightness {item.mean:.0f} of 255 "
                                f"(above {BRIGHT_MEAN:g})"))
    elif blank:
        found.append(("near_blank", f"contrast {item.std:.1f} (below {NEAR_BLANK_STD:g} of 255)"))
    if not blank and item.sharpness < BLURRY_SHARPNESS:
        found.append(("blurry", f"sharpness {item.sharpness:.3f} (below {BLURRY_SHARPNESS:g})"))
    if min(item.width, item.height) < TINY_SIDE:
        found.append(("tiny", f"{item.width}x{item.height} pixels (a side below {TINY_SIDE})"))
    ratio = max(item.width, item.height) / max(1, min(item.width, item.height))
    if ratio >= EXTREME_ASPECT:
        found.append(("extreme_aspect", f"{item.width}x{item.height}, sides {ratio:.1f}:1"))
    if item.grayscale and not blank and grey_share <= GREYSCALE_MINORITY:
        found.append(("grayscale", f"grey, while {1 - grey_share:.0%} of the images are colour"))
    return found


def balance_finding(class_names: Sequence[str], counts: Sequence[int]) -> Finding:
    """The class balance as a verdict; its one item names the largest and smallest class."""
    if not counts:
        return Finding("imbalance", (), "no classes")
    largest = max(range(len(counts)), key=counts.__getitem__)
    smallest = min(range(len(counts)), key=counts.__getitem__)
    ratio = counts[largest] / max(1, counts[smallest])
    shown = (f"{class_names[largest]} has {counts[largest]:,} training images, "
             f"{class_names[smallest]} {counts[smallest]:,}")
    if counts[smallest] == 0:
        verdict = f"a class has no training images ({shown})"
    elif ratio >= IMBALANCED_RATIO:
        verdict = (f"imbalanced, {ratio:.1f}x ({shown}): use a class-weighted loss or a "
                   "weighted sampler (setting 'imbalance')")
    elif ratio >= 1.5:
        verdict = f"mildly imbalanced, {ratio:.1f}x ({shown}): usually fine"
    else:
        verdict = f"balanced ({ratio:.1f}x between the largest and smallest class)"
    return Finding("imbalance", (), verdict)
