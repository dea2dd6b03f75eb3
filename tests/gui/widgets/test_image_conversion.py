"""numpy_to_qimage: right pixels, owning copies, clear errors."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtGui import QImage

from workbench.gui.widgets.image_conversion import numpy_to_qimage


def test_rgb_pixels_survive_and_the_image_owns_them(qapp):
    array = np.zeros((3, 5, 3), dtype=np.uint8)
    array[1, 4] = (200, 100, 50)
    image = numpy_to_qimage(array)
    array[:] = 0  # the QImage must not share this buffer
    del array
    assert (image.width(), image.height()) == (5, 3)
    assert image.format() == QImage.Format.Format_RGB888
    assert image.pixelColor(4, 1).getRgb()[:3] == (200, 100, 50)


def test_gray_and_non_contiguous_views(qapp):
    gray = np.arange(12, dtype=np.uint8).reshape(3, 4) * 20
    image = numpy_to_qimage(gray)
    assert image.format() == QImage.Format.Format_Grayscale8
    assert image.pixelColor(3, 2).red() == gray[2, 3]

    rgb = np.random.default_rng(0).integers(0, 256, (6, 8, 3), dtype=np.uint8)
    view = rgb[::2, 1::2]  # strided, not contiguous
    image = numpy_to_qimage(view)
    assert (image.width(), image.height()) == (4, 3)
    assert image.pixelColor(2, 1).getRgb()[:3] == tuple(int(v) for v in view[1, 2])


@pytest.mark.parametrize(
    "array",
    [np.zeros((4, 4, 3), dtype=np.float32), np.zeros((4, 4, 2), dtype=np.uint8),
     np.zeros((0, 4, 3), dtype=np.uint8), np.zeros((2, 2, 2, 3), dtype=np.uint8)],
)
def test_other_arrays_are_refused(qapp, array):
    with pytest.raises(ValueError):
        numpy_to_qimage(array)
