"""Editors the config form is built from: one binding per TrainConfig field, with its error label.

A binding reads and writes one field's value in its widget and emits ``edited`` when the user
changes it. A :class:`FieldRow` puts the widget above a red label that shows that field's
problems from ``TrainConfig.validate()``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QValidator, QWheelEvent
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QApplication,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

INT_MIN = -(2**31) + 1
INT_MAX = 2**31 - 1


class WheelGuard(QObject):
    """Lets the wheel edit a spin box or combo box only while it has keyboard focus.

    Without focus the wheel scrolls the enclosing scroll area instead, so scrolling down a long
    form over its fields never changes a value on the way.
    """

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if event.type() != QEvent.Type.Wheel or not isinstance(watched, QWidget):
            return False
        if watched.hasFocus():
            return False
        area = _scroll_area_of(watched)
        if area is not None:
            assert isinstance(event, QWheelEvent)
            viewport = area.viewport()
            position = viewport.mapFromGlobal(event.globalPosition().toPoint())
            forwarded = QWheelEvent(position.toPointF(), event.globalPosition(),
                                    event.pixelDelta(), event.angleDelta(), event.buttons(),
                                    event.modifiers(), event.phase(), event.inverted(),
                                    event.source())
            QApplication.sendEvent(viewport, forwarded)
        event.ignore()
        return True


def guard_wheel(widget: QWidget) -> None:
    """Make ``widget`` take focus by click or Tab only, and take wheel events only with focus."""
    widget.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
    widget.installEventFilter(WheelGuard(widget))


def _scroll_area_of(widget: QWidget) -> QAbstractScrollArea | None:
    parent = widget.parentWidget()
    while parent is not None and not isinstance(parent, QAbstractScrollArea):
        parent = parent.parentWidget()
    return parent


class ScientificSpinBox(QDoubleSpinBox):
    """A float editor for values like 1e-4: shows ``%g`` text; arrows multiply or divide by 10."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setDecimals(20)  # keep what the user typed; text is formatted by textFromValue
        self.setRange(-1e9, 1e9)

    def textFromValue(self, value: float) -> str:  # noqa: N802 - Qt override
        return f"{value:.10g}"

    def valueFromText(self, text: str) -> float:  # noqa: N802 - Qt override
        try:
            return float(text)
        except ValueError:
            return self.value()

    def validate(self, text: str, pos: int) -> object:
        try:
            value = float(text)
        except ValueError:
            partial = text.strip().lower()
            if partial in ("", "-", "+", ".", "-.") or partial.endswith(("e", "e-", "e+")):
                return QValidator.State.Intermediate, text, pos
            return QValidator.State.Invalid, text, pos
        if not math.isfinite(value):
            return QValidator.State.Invalid, text, pos
        return QValidator.State.Acceptable, text, pos

    def stepBy(self, steps: int) -> None:  # noqa: N802 - Qt override
        value = self.value()
        self.setValue(value * 10.0**steps if value > 0 else 10.0 ** min(steps, 0) * 1e-3)


class CompactDoubleSpinBox(QDoubleSpinBox):
    """A plain float editor that shows 0.9, not 0.900000, while keeping six decimals."""

    def textFromValue(self, value: float) -> str:  # noqa: N802 - Qt override
        text = f"{value:.{self.decimals()}f}".rstrip("0").rstrip(".")
        return text if text not in ("", "-", "-0") else "0"


class Binding(QObject):
    """One TrainConfig field shown in one widget."""

    edited = Signal(str)

    def __init__(self, field: str, widget: QWidget) -> None:
        super().__init__(widget)
        self.field = field
        self.widget = widget

    def value(self) -> Any:
        """The value the widget shows, typed like the config field."""
        raise NotImplementedError

    def set_value(self, value: Any) -> None:
        """Show ``value`` without emitting ``edited``."""
        raise NotImplementedError

    def _emit_edited(self, *_: object) -> None:
        self.edited.emit(self.field)


class ComboBinding(Binding):
    """A choice field showing each value's human label; the value rides along as item data.

    A value the combo does not list (from a hand-edited file) is added under its own name, so
    the form can show it and flag it.
    """

    def __init__(self, field: str, choices: Mapping[str, str],
                 parent: QWidget | None = None) -> None:
        combo = QComboBox(parent)
        for value, label in choices.items():
            combo.addItem(label, value)
        combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        combo.setMinimumContentsLength(12)  # long labels elide instead of widening the form
        guard_wheel(combo)
        super().__init__(field, combo)
        self.combo = combo
        combo.currentIndexChanged.connect(self._emit_edited)

    def value(self) -> str:
        data = self.combo.currentData()
        return str(data) if data is not None else self.combo.currentText()

    def set_value(self, value: Any) -> None:
        text = str(value)
        self.combo.blockSignals(True)
        index = self.combo.findData(text)
        if index < 0:
            self.combo.addItem(text, text)
            index = self.combo.count() - 1
        self.combo.setCurrentIndex(index)
        self.combo.blockSignals(False)


class IntBinding(Binding):
    """A whole-number field; the range is wide so a wrong value can be typed and then flagged."""

    def __init__(self, field: str, minimum: int = INT_MIN, maximum: int = INT_MAX,
                 parent: QWidget | None = None) -> None:
        spin = QSpinBox(parent)
        spin.setRange(minimum, maximum)
        spin.setAccelerated(True)
        guard_wheel(spin)
        super().__init__(field, spin)
        self.spin = spin
        spin.valueChanged.connect(self._emit_edited)

    def value(self) -> int:
        return int(self.spin.value())

    def set_value(self, value: Any) -> None:
        self.spin.blockSignals(True)
        self.spin.setValue(int(value))
        self.spin.blockSignals(False)


class FloatBinding(Binding):
    """A float field: a plain spin box with ``decimals``, or scientific for lr-like values."""

    def __init__(self, field: str, scientific: bool = False, decimals: int = 4,
                 step: float = 0.05, parent: QWidget | None = None) -> None:
        if scientific:
            spin: QDoubleSpinBox = ScientificSpinBox(parent)
        else:
            spin = CompactDoubleSpinBox(parent)
            spin.setDecimals(decimals)
            spin.setRange(-1e6, 1e6)
            spin.setSingleStep(step)
        guard_wheel(spin)
        super().__init__(field, spin)
        self.spin = spin
        spin.valueChanged.connect(self._emit_edited)

    def value(self) -> float:
        return float(self.spin.value())

    def set_value(self, value: Any) -> None:
        self.spin.blockSignals(True)
        self.spin.setValue(float(value))
        self.spin.blockSignals(False)


class CheckBinding(Binding):
    """A true/false field."""

    def __init__(self, field: str, text: str, parent: QWidget | None = None) -> None:
        box = QCheckBox(text, parent)
        super().__init__(field, box)
        self.box = box
        box.toggled.connect(self._emit_edited)

    def value(self) -> bool:
        return self.box.isChecked()

    def set_value(self, value: Any) -> None:
        self.box.blockSignals(True)
        self.box.setChecked(bool(value))
        self.box.blockSignals(False)


class TextBinding(Binding):
    """A text or path field, optionally with a "Browse…" button next to it."""

    def __init__(self, field: str, placeholder: str = "", browse: bool = False,
                 parent: QWidget | None = None) -> None:
        container = QWidget(parent)
        self.edit = QLineEdit(container)
        self.edit.setPlaceholderText(placeholder)
        self.browse_button = QPushButton("Browse\u2026", container) if browse else None
        layout = QHBoxLayout(container)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.edit, 1)
        if self.browse_button is not None:
            layout.addWidget(self.browse_button)
        super().__init__(field, container)
        self.edit.textChanged.connect(self._emit_edited)

    def value(self) -> str:
        return self.edit.text().strip()

    def set_value(self, value: Any) -> None:
        self.edit.blockSignals(True)
        self.edit.setText(str(value))
        self.edit.blockSignals(False)


class FieldRow(QWidget):
    """A field's editor with its problem text right below it, hidden while the field is valid."""

    def __init__(self, binding: Binding, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.binding = binding
        self._help = ""
        self.error_label = QLabel(self)
        self.error_label.setObjectName("fieldError")
        self.error_label.setProperty("role", "error")
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet("color: #c62828;")
        self.error_label.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(binding.widget)
        layout.addWidget(self.error_label)

    def set_problems(self, problems: list[str]) -> None:
        """Show this field's messages (or hide the label) and mark the editor invalid."""
        text = "\n".join(problems)
        if text == self.error_label.text() and self.error_label.isHidden() == (not problems):
            return
        self.error_label.setText(text)
        self.error_label.setVisible(bool(problems))
        self.binding.widget.setProperty("invalid", bool(problems))
        self._update_tooltip()
        style = self.binding.widget.style()
        style.unpolish(self.binding.widget)
        style.polish(self.binding.widget)

    def set_help(self, text: str) -> None:
        """The field's help (what it does, unit, values, default), shown as its tooltip."""
        self._help = text
        self._update_tooltip()

    def help_text(self) -> str:
        """The help set by ``set_help``."""
        return self._help

    def _update_tooltip(self) -> None:
        problems = self.error_label.text() if not self.error_label.isHidden() else ""
        tooltip = "\n\n".join(part for part in (problems, self._help) if part)
        self.binding.widget.setToolTip(tooltip)

    def problems_text(self) -> str:
        """The messages shown, '' when none."""
        return self.error_label.text() if self.error_label.isVisibleTo(self) else ""
