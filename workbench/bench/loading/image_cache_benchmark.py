"""When does caching a decoded image pay? Decoding against reading the cached array, on real files.

The image cache (``core/data/image_cache.py``) keeps each image's resized pixels as a ``.npy``
file so that a later epoch or run reads them instead of decoding the source again. That pays
when decoding is dear (a 12-megapixel JPEG) and costs when it is cheap: writing one more file
per image is a file creation, and reading it back is about what decoding a small PNG costs.
This bench measures, for real files of every kind the real sets and packages ship, at the
sizes runs resize to: the decode (``decode_file``, what an uncached image costs each time),
the write of the cached array (once) and its read (each later time), with the ratio of the
source file's bytes to the array's bytes, the figure ``image_cache.worth_caching`` decides by.

    python -m workbench.bench.loading.image_cache_benchmark --out /tmp/cache_bench

Files: the real sets of ``real_image_sets`` as the parity bench writes them (digit scans at
8 px and 64 px, faces, photo patches), Debian's ``openclipart-png`` clip art (one file in 40,
of every size) and the photographs scikit-learn and scikit-image ship.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from workbench.bench.real_image_sets import write_real_set
from workbench.core.data.image_cache import _npy_bytes, _read_cached, _store, cache_path
from workbench.core.data.image_decoding import ImageDecodeError, decode_file

CLIPART_ROOT = Path("/usr/share/openclipart/png")


@dataclass
class Timing:
    kind: str
    path: Path
    resize: int
    file_bytes: int
    array_bytes: int
    decode_ms: float
    write_ms: float
    read_ms: float

    @property
    def ratio(self) -> float:
        return self.file_bytes / self.array_bytes


def package_photos() -> list[Path]:
    """The photographs scikit-learn and scikit-image ship (JPEG and PNG)."""
    import skimage.data
    import sklearn.datasets

    sk = Path(sklearn.datasets.__file__).parent / "images"
    ski = Path(skimage.data.__file__).parent
    names = ["astronaut.png", "chelsea.png", "coffee.png", "rocket.jpg", "retina.jpg",
             "hubble_deep_field.jpg", "camera.png", "brick.png"]
    return sorted(sk.glob("*.jpg")) + [ski / name for name in names if (ski / name).exists()]


def files(work: Path) -> list[tuple[str, Path]]:
    chosen: list[tuple[str, Path]] = []
    for name in ("digits", "digits64", "faces", "photos"):
        root = write_real_set(name, work / name, 20, 2, seed=0)
        chosen += [(name, path) for path in sorted((root / "train").rglob("*.png"))[::8]]
    if CLIPART_ROOT.is_dir():
        chosen += [("clip art", path) for path in sorted(CLIPART_ROOT.rglob("*.png"))[::40]]
    chosen += [("package photo", path) for path in package_photos()]
    return chosen


def _best_ms(action, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return min(times)


def measure(kind: str, path: Path, resize: int, cache: Path, repeats: int = 3) -> Timing | None:
    try:
        array = decode_file(str(path), resize)
    except ImageDecodeError:
        return None
    decode = _best_ms(lambda: decode_file(str(path), resize), repeats)
    target = cache_path(str(path), resize, False, cache)
    started = time.perf_counter()
    _store(target, _npy_bytes(array))  # once: a second write would replace, not create
    write = (time.perf_counter() - started) * 1000
    read = _best_ms(lambda: _read_cached(target, resize, False), repeats)
    return Timing(kind, path, resize, path.stat().st_size, array.nbytes, decode, write, read)


def table(timings: list[Timing]) -> str:
    """One row a band of the file-to-array ratio: medians of decode, write and read."""
    bands = [(0, 0.5), (0.5, 1), (1, 2), (2, 4), (4, 8), (8, 16), (16, 64), (64, float("inf"))]
    lines = ["| file bytes / array bytes | files | decode ms | cache write ms | cache read ms "
             "| decode / read | kinds |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for low, high in bands:
        rows = [t for t in timings if low <= t.ratio < high]
        if not rows:
            continue
        decode = statistics.median(t.decode_ms for t in rows)
        write = statistics.median(t.write_ms for t in rows)
        read = statistics.median(t.read_ms for t in rows)
        kinds = ", ".join(sorted({t.kind for t in rows}))
        label = f"{low:g} to {high:g}" if high != float("inf") else f"{low:g} and more"
        lines.append(f"| {label} | {len(rows)} | {decode:.3f} | {write:.3f} | {read:.3f} | "
                     f"{decode / read:.1f}x | {kinds} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="folder for the sets and cache")
    parser.add_argument("--sizes", default="32,224", help="resize sizes, comma-separated")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="workbench-cache-bench-") as tmp:
        work = args.out or Path(tmp)
        chosen = files(work)
        timings: list[Timing] = []
        for size in (int(s) for s in args.sizes.split(",")):
            for kind, path in chosen:
                timing = measure(kind, path, size, work / f"cache{size}")
                if timing is not None:
                    timings.append(timing)
            print(f"\nresize {size}: {len([t for t in timings if t.resize == size])} files\n")
            print(table([t for t in timings if t.resize == size]))


if __name__ == "__main__":
    main()
