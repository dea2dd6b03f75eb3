"""The settings form: widgets that edit one TrainConfig, with each problem shown at its field.

Problems come from ``TrainConfig.validate()``, the same words the engine would stop with. Ranges
are deliberately wide so a user can type 0 or a negative number and read why it is wrong,
instead of a spin box silently refusing it.
"""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from workbench.core.runs.config import TrainConfig, defaults_by_model
from workbench.core.runs.config_fields import FieldContext, applies, describe, help_text
from workbench.core.runs.model_defaults import (
    apply_model_defaults,
    full_finetune_for_random_weights,
    recipe_for_weights,
)
from workbench.gui.widgets.form_fields import (
    Binding,
    CheckBinding,
    ComboBinding,
    FieldRow,
    FloatBinding,
    IntBinding,
    TextBinding,
)
from workbench.gui.widgets.image_cache_status import ImageCacheStatus
from workbench.gui.widgets.model_facts_label import ModelFactsLabel

# (group title, fields); labels, tooltips and choices come from config_fields.
_LAYOUT: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Model", ("model", "weights", "weights_file", "finetune", "head_epochs",
               "backbone_lr_factor")),
    ("Crops", ("crop_mode", "crop_strategy", "resize_size", "interpolation", "crop_size",
               "crop_scale_min",
               "crop_scale_max", "crop_ratio_min", "crop_ratio_max", "train_hflip",
               "progressive_resize_start")),
    ("Augmentation (training only)", (
        "color_jitter_brightness", "color_jitter_contrast", "color_jitter_saturation",
        "color_jitter_hue", "rotation_degrees", "auto_augment", "rand_augment_num_ops",
        "rand_augment_magnitude", "mixup_alpha", "cutmix_alpha", "label_smoothing")),
    ("Optimisation", ("epochs", "batch_size", "optimizer", "lr", "momentum", "weight_decay",
                      "scheduler", "lr_step_size", "lr_gamma", "imbalance", "early_stopping",
                      "early_stopping_patience")),
    ("Data and speed", ("val_fraction", "exclude_file", "workers", "amp", "amp_dtype",
                        "channels_last", "pin_memory", "cache_images", "cache_dir",
                        "cache_features", "images_on_device", "max_steps_per_epoch")),
    ("Faults", ("max_failed_images", "loader_timeout", "oom_retry_smaller_batch")),
    ("Reproducibility and output", ("seed", "deterministic", "output_dir", "run_name")),
)
# Rows shown only while the settings use them (the other fields grey out instead): the
# stages of head-first fine-tuning mean nothing to the other modes.
_HIDDEN_UNLESS_USED = frozenset({"head_epochs", "backbone_lr_factor"})

# How each field is edited; booleans get a check box and choice fields a combo box by type.
_NUMBER_EDITORS: dict[str, dict[str, object]] = {
    "lr": {"scientific": True},
    "weight_decay": {"scientific": True},
    "momentum": {"decimals": 6, "step": 0.05},
    "lr_gamma": {"decimals": 6, "step": 0.05},
    "val_fraction": {"decimals": 6, "step": 0.05},
    "loader_timeout": {"decimals": 1, "step": 10.0},
    "crop_scale_min": {"decimals": 6, "step": 0.05},
    "crop_scale_max": {"decimals": 6, "step": 0.05},
    "crop_ratio_min": {"decimals": 6, "step": 0.05},
    "crop_ratio_max": {"decimals": 6, "step": 0.05},
    "color_jitter_brightness": {"decimals": 3, "step": 0.1},
    "color_jitter_contrast": {"decimals": 3, "step": 0.1},
    "color_jitter_saturation": {"decimals": 3, "step": 0.1},
    "color_jitter_hue": {"decimals": 3, "step": 0.05},
    "rotation_degrees": {"decimals": 1, "step": 5.0},
    "mixup_alpha": {"decimals": 3, "step": 0.1},
    "cutmix_alpha": {"decimals": 3, "step": 0.1},
    "label_smoothing": {"decimals": 3, "step": 0.05},
    "backbone_lr_factor": {"decimals": 4, "step": 0.05},
    "progressive_resize_start": {"decimals": 3, "step": 0.05},
}
_TEXT_EDITORS: dict[str, tuple[str, bool]] = {  # field: (placeholder, browse button)
    "weights_file": ("a state_dict .pt file", True),
    "cache_dir": ("empty: the user cache folder", True),
    "exclude_file": ("empty: train on every image", False),
    "output_dir": ("folder for run folders", True),
    "run_name": ("optional; a timestamp is used when empty", False),
}


def _make_binding(name: str, default: object) -> Binding:
    description = describe(name)
    if description.choices:
        return ComboBinding(name, description.choices)
    if isinstance(default, bool):
        return CheckBinding(name, description.label)
    if isinstance(default, int):
        return IntBinding(name)
    if isinstance(default, float):
        return FloatBinding(name, **_NUMBER_EDITORS.get(name, {}))  # type: ignore[arg-type]
    placeholder, browse = _TEXT_EDITORS.get(name, ("", False))
    return TextBinding(name, placeholder, browse=browse)


def _make_bindings() -> dict[str, Binding]:
    defaults = TrainConfig()
    return {name: _make_binding(name, getattr(defaults, name))
            for _, fields in _LAYOUT for name in fields}


class ConfigForm(QWidget):
    """Edits one TrainConfig; fields the form does not show (data_root, device, resume) are kept.

    Signals:
        config_changed(TrainConfig): after every edit and after ``set_config``.
    """

    config_changed = Signal(object)

    def __init__(self, config: TrainConfig | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._config = config or TrainConfig()
        self._context = FieldContext()
        self._problems: list[str] = []
        self._bindings = _make_bindings()
        self._rows: dict[str, FieldRow] = {}
        self._labels: dict[str, QLabel] = {}
        self._forms: dict[str, QFormLayout] = {}  # field -> the group's form holding its row
        self._other_problems = QLabel(self)
        self._other_problems.setObjectName("formProblems")
        self._other_problems.setProperty("role", "error")
        self._other_problems.setWordWrap(True)
        self._other_problems.setStyleSheet("color: #c62828;")
        # Fields the user has edited here: choosing a model sets its defaults in the others.
        self._edited: set[str] = set()
        self._defaults_note = QLabel(self)
        self._defaults_note.setObjectName("formDefaultsNote")
        self._defaults_note.setWordWrap(True)
        self._defaults_note.setVisible(False)
        self.cache_status = ImageCacheStatus(self)
        # Under the model choice: the chosen model's ImageNet figures, crop and recipe.
        self.model_facts = ModelFactsLabel(self)
        # Beside the model choice; the window opens the model picker with it.
        self.compare_models_button = QPushButton("Compare\u2026", self)
        self.compare_models_button.setObjectName("compareModelsButton")
        self.compare_models_button.setToolTip(
            "Every model side by side: ImageNet accuracy, size and cost, and measured on this "
            "machine, training images/s, latency and (on a GPU) memory and the largest batch.")
        # The window connects it to the learning-rate finder; it sits under the lr field.
        self.find_lr_button = QPushButton("Find learning rate\u2026", self)
        self.find_lr_button.setObjectName("findLrButton")
        self.find_lr_button.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        self.find_lr_button.setToolTip(
            "Run a short range test (Smith's, as fastai's lr_find) on these settings and "
            "images: the lr grows step by step, the loss is plotted, and the lr where it falls "
            "fastest is suggested. The model and the optimiser are left as they were.")
        self._build_layout()

        for binding in self._bindings.values():
            binding.edited.connect(self._on_field_changed)
        self._browse_button("weights_file").clicked.connect(self._on_weights_file_browse)
        self._browse_button("output_dir").clicked.connect(self._on_output_dir_browse)
        self._browse_button("cache_dir").clicked.connect(self._on_cache_dir_browse)

        self.set_config(self._config)

    # ------------------------------------------------------------------ public API
    def config(self) -> TrainConfig:
        """The config the widgets show (read back from them), with the fields not shown."""
        return self._config.replace(
            **{name: binding.value() for name, binding in self._bindings.items()}
        )

    def set_config(self, config: TrainConfig) -> None:
        """Show ``config`` in every field and emit ``config_changed`` once."""
        for name, binding in self._bindings.items():
            binding.set_value(getattr(config, name))
        self._config = config
        self._config = self.config()  # what the widgets can show is what the form edits
        self._config_updated()

    def update_config(self, **changes: object) -> None:
        """Change some fields (e.g. data_root from the dataset panel) and refresh the form."""
        self.set_config(self._config.replace(**changes))

    def edit_field(self, field: str, value: object) -> None:
        """Set ``field`` as if the user had typed ``value`` (a file dialog's path, the lr the
        range test suggests): validated, marked as edited, and ``config_changed`` emitted."""
        self._bindings[field].set_value(value)
        self._on_field_changed(field)

    def set_cuda_available(self, available: bool | None) -> None:
        """Say whether a CUDA device was detected (None: not known); CUDA-only fields follow."""
        self._context = replace(self._context, cuda_available=available)
        self._update_enabled_fields()

    def set_dataset_split(self, has_split: bool | None) -> None:
        """Say whether the data folder holds train/ and val/ folders (None: not scanned)."""
        self._context = replace(self._context, has_split=has_split)
        self._update_enabled_fields()

    def field_applies(self, field: str) -> bool:
        """Whether the current settings, device and dataset use ``field``."""
        return applies(field, self._config, self._context)

    def field_shown(self, field: str) -> bool:
        """Whether ``field``'s row is on the form (head-first fields only in that mode)."""
        return self._forms[field].isRowVisible(self._rows[field])

    def problems(self) -> list[str]:
        """Every problem ``TrainConfig.validate()`` reports for the current config."""
        return list(self._problems)

    def field_problem_text(self, field: str) -> str:
        """The message shown next to ``field`` ('' when it is valid or not shown)."""
        row = self._rows.get(field)
        return row.problems_text() if row is not None else ""

    def field_widget(self, field: str) -> QWidget:
        """The editor of ``field`` (tests and the window use it to focus a field)."""
        return self._bindings[field].widget

    def defaults_note_text(self) -> str:
        """What the form last set by itself (a model's defaults, full fine-tuning), or ''."""
        return self._defaults_note.text()

    def other_problems_text(self) -> str:
        """Problems of fields the form does not show, such as data_root."""
        return self._other_problems.text()

    # ------------------------------------------------------------------ slots
    def _on_field_changed(self, field: str) -> None:
        value = self._bindings[field].value()
        if getattr(self._config, field) == value:
            return
        self._edited.add(field)
        edited = self._config.replace(**{field: value})
        config, notes = edited, []
        if field == "model":
            config = apply_model_defaults(edited, self._edited)
            if config != edited:
                notes.append(f"{value} defaults applied to the fields not edited here.")
        config, switched = full_finetune_for_random_weights(config, self._edited)
        notes += [switched] if switched else []
        if field in ("model", "weights"):  # a loaded config's recipe is otherwise the user's
            config, recipe_note = recipe_for_weights(config, self._edited)
            notes += [recipe_note] if recipe_note else []
        self._defaults_note.setText(" ".join(notes))
        self._defaults_note.setVisible(bool(notes))
        if config != edited:
            self.set_config(config)  # the widgets show what was set for the user
            return
        self._config = config
        self._config_updated()

    def _on_weights_file_browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose a state_dict file",
                                              self._config.weights_file,
                                              "PyTorch weights (*.pt *.pth);;All files (*)")
        if path:
            self.edit_field("weights_file", path)

    def _on_output_dir_browse(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Folder for runs", self._config.output_dir)
        if path:
            self.edit_field("output_dir", path)

    def _on_cache_dir_browse(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Folder for resized images",
                                                self._config.cache_dir)
        if path:
            self.edit_field("cache_dir", path)

    # ------------------------------------------------------------------ refreshes
    def _config_updated(self) -> None:
        """Everything that follows the config: problems, greyed-out fields, the cache line,
        and ``config_changed``."""
        self._update_problems()
        self._update_enabled_fields()
        self.cache_status.set_folder(self._config.cache_dir)
        self.model_facts.show_model(self._config.model, self._config.weights)
        self.config_changed.emit(self._config)

    def _update_problems(self) -> None:
        field_problems = self._config.field_problems()
        self._problems = [text for _, text in field_problems]
        by_field: dict[str, list[str]] = {}
        for field, problem in field_problems:
            by_field.setdefault(field, []).append(problem)
        for field, row in self._rows.items():
            row.set_problems(by_field.pop(field, []))
        leftover = [p for problems in by_field.values() for p in problems]
        self._other_problems.setText("\n".join(leftover))
        self._other_problems.setVisible(bool(leftover))

    def _update_enabled_fields(self) -> None:
        """Grey out fields the current choices, device or dataset ignore, unless they hold a
        problem to fix (each field's tooltip says when it applies)."""
        for field, row in self._rows.items():
            enabled = self.field_applies(field) or bool(row.problems_text())
            row.setEnabled(enabled)
            if field in self._labels:
                self._labels[field].setEnabled(enabled)
            if field in _HIDDEN_UNLESS_USED:
                self._forms[field].setRowVisible(row, enabled)

    # ------------------------------------------------------------------ helpers
    def _build_layout(self) -> None:
        layout = QVBoxLayout(self)
        layout.addWidget(self._other_problems)
        layout.addWidget(self._defaults_note)
        defaults = TrainConfig()
        for title, fields in _LAYOUT:
            group = QGroupBox(title, self)
            form = QFormLayout(group)
            form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
            for field in fields:
                row = FieldRow(self._bindings[field], group)
                row.setObjectName(f"field_{field}")
                if field == "model":
                    _put_beside_editor(row, self.compare_models_button)
                row.set_help(help_text(field, getattr(defaults, field), list_values=False,
                                       per_model=defaults_by_model(field)))
                self._rows[field] = row
                self._forms[field] = form
                if isinstance(self._bindings[field], CheckBinding):
                    form.addRow("", row)  # the check box carries the label
                else:
                    label = QLabel(describe(field).label, group)
                    label.setToolTip(row.help_text())
                    label.setBuddy(self._bindings[field].widget)
                    self._labels[field] = label
                    form.addRow(label, row)
                if field == "cache_dir":
                    form.addRow("", self.cache_status)
                if field == "model":
                    form.addRow("", self.model_facts)
                if field == "lr":
                    form.addRow("", self.find_lr_button)
            layout.addWidget(group)
        layout.addStretch(1)

    def _browse_button(self, field: str):  # -> QPushButton
        binding = self._bindings[field]
        assert isinstance(binding, TextBinding) and binding.browse_button is not None
        return binding.browse_button



def _put_beside_editor(row: FieldRow, button: QPushButton) -> None:
    """``button`` on the line of ``row``'s editor, right of it; the problem text stays below."""
    editor = row.binding.widget
    layout = row.layout()
    index = layout.indexOf(editor)
    layout.removeWidget(editor)
    line = QHBoxLayout()
    line.setContentsMargins(0, 0, 0, 0)
    line.addWidget(editor, 1)
    line.addWidget(button)
    layout.insertLayout(index, line)
