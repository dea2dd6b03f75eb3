"""Form fields and the wheel: over a long settings form the wheel scrolls the form and never
edits a spin box or combo box it passes over; a field the user clicked into takes the wheel."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QApplication, QComboBox, QScrollArea, QVBoxLayout, QWidget

from workbench.core.runs.config import TrainConfig
from workbench.gui.panels.config_form import ConfigForm
from workbench.gui.panels.device_panel import DevicePanel


def wheel(widget: QWidget, steps: int) -> bool:
    """Send one wheel event of ``steps`` notches (negative: towards the user) over the centre of
    ``widget``, as the window system delivers it; True when something accepted it."""
    centre = QPointF(widget.rect().center())
    event = QWheelEvent(centre, QPointF(widget.mapToGlobal(centre)), QPoint(0, 0),
                        QPoint(0, 120 * steps), Qt.MouseButton.NoButton,
                        Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(widget, event)
    return event.isAccepted()


def scrolled_form(qtbot) -> tuple[QScrollArea, ConfigForm]:
    form = ConfigForm(TrainConfig())
    area = QScrollArea()
    area.setWidgetResizable(True)
    area.setWidget(form)
    area.resize(500, 300)  # far shorter than the form: it must scroll
    qtbot.addWidget(area)
    area.show()
    qtbot.waitExposed(area)
    return area, form


def test_the_wheel_over_unfocused_fields_scrolls_the_form_and_edits_nothing(qtbot):
    area, form = scrolled_form(qtbot)
    bar = area.verticalScrollBar()
    assert bar.maximum() > 0 and bar.value() == 0
    before = form.config()

    for field in ("epochs", "lr", "momentum", "model", "scheduler", "crop_mode"):
        widget = form.field_widget(field)
        area.ensureWidgetVisible(widget)
        assert not widget.hasFocus()
        position = bar.value()
        wheel(widget, -1)
        assert bar.value() > position or bar.value() == bar.maximum(), field
        bar.setValue(0)

    assert form.config() == before


def test_a_focused_field_takes_the_wheel(qtbot):
    area, form = scrolled_form(qtbot)
    epochs = form.field_widget("epochs")
    assert epochs.focusPolicy() == Qt.FocusPolicy.StrongFocus
    area.ensureWidgetVisible(epochs)
    area.activateWindow()
    epochs.setFocus()
    qtbot.waitUntil(epochs.hasFocus)

    wheel(epochs, 1)
    assert form.config().epochs == TrainConfig().epochs + 1

    scheduler = form.field_widget("scheduler")
    scheduler.setFocus()
    qtbot.waitUntil(scheduler.hasFocus)
    wheel(scheduler, -1)
    assert form.config().scheduler == "cosine"  # the next choice after "step"


def test_the_wheel_over_the_device_choice_does_not_switch_the_device(qtbot):
    panel = DevicePanel()
    page = QWidget()
    layout = QVBoxLayout(page)
    layout.addWidget(panel)
    layout.addWidget(ConfigForm(TrainConfig()))
    area = QScrollArea()
    area.setWidgetResizable(True)
    area.setWidget(page)
    area.resize(500, 300)
    qtbot.addWidget(area)
    area.show()
    with qtbot.waitSignal(panel.devices_detected, timeout=60_000):
        panel.start_detection()
    combo = panel.findChild(QComboBox)
    assert combo.isEnabled() and combo.count() >= 2  # auto and at least the CPU
    bar = area.verticalScrollBar()

    wheel(combo, -1)
    wheel(combo, -1)
    assert panel.device() == "auto" and combo.currentIndex() == 0
    assert bar.value() > 0
