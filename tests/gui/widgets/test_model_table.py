"""The picker's table shows a GPU measurement's memory, fit and largest batch in their own
columns, and sorts them as numbers."""

from __future__ import annotations

from PySide6.QtCore import Qt

from tests.cli.test_models_command import gpu_measurement
from workbench.gui.widgets.model_table import COLUMN_NAMES, ModelTable


def test_gpu_figures_fill_their_columns_and_sort_as_numbers(qtbot):
    table = ModelTable()
    qtbot.addWidget(table)
    table.set_measurement(gpu_measurement())
    table.set_measurement(gpu_measurement(
        settings=gpu_measurement().settings.__class__("resnet50", 64, 224, True, "full",
                                                      "cuda:0"),
        peak_memory_bytes=9 * 2**20, largest_batch=1024, largest_is_cap=True,
        train_images_per_second=12.0))

    assert [table.cell_text("resnet18", column) for column in
            ("train_speed", "peak_memory", "latency", "fits")] == \
        ["1,234.5", "1,536", "3.2", "yes (96)"]
    assert table.cell_text("resnet50", "fits") == "yes (\u22651024)"

    table.sortByColumn(COLUMN_NAMES.index("peak_memory"), Qt.SortOrder.AscendingOrder)
    assert table.models()[:2] == ["resnet50", "resnet18"]  # 9 MiB before 1,536 MiB
    table.sortByColumn(COLUMN_NAMES.index("fits"), Qt.SortOrder.DescendingOrder)
    assert table.models()[:2] == ["resnet50", "resnet18"]  # 1024 before 96
    table.sortByColumn(COLUMN_NAMES.index("train_speed"), Qt.SortOrder.DescendingOrder)
    assert table.models()[:2] == ["resnet18", "resnet50"]
    assert table.cell_text(table.models()[-1], "train_speed") == "\u2014"  # unmeasured last
