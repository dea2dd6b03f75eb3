"""numpy images to QImage, on the GUI thread, as owning copies."""

from __future__ import annotations

import numpy as np
from PySide6.QtGui import QImage

_FORMATS = {
    1: QImage.Format.Format_Grayscale8,
    3: QImage.Format.Format_RGB888,
    4: QImage.Format.Format_RGBA8888,
}


def numpy_to_qimage(array: np.ndarray) -> QImage:
    """Copy an ``HxW`` gray, ``HxWx3`` RGB or ``HxWx4`` RGBA uint8 array into a new QImage.

    The QImage owns its pixels (``QImage.copy``), so the array may be freed or changed
    afterwards; a QImage that merely wrapped the array's buffer would read freed memory.

    Raises:
        ValueError: for any other dtype or shape.
    """
    if array.dtype != np.uint8:
        raise ValueError(f"expected a uint8 image, got dtype {array.dtype}")
    if array.ndim == 2:
        array = array[:, :, None]
    if array.ndim != 3 or array.shape[2] not in _FORMATS:
        raise ValueError(f"expected an HxW, HxWx3 or HxWx4 image, got shape {array.shape}")
    height, width, channels = array.shape
    if height == 0 or width == 0:
        raise ValueError(f"expected a non-empty image, got shape {array.shape}")
    array = np.ascontiguousarray(array)
    view = QImage(array.data, width, height, width * channels, _FORMATS[channels])
    return view.copy()
