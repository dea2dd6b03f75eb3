"""The settings form: widgets that edit one TrainConfig, with each problem shown at its field.

Problems come from ``TrainConfig.validate()``, the same words the engine would stop with. Ranges
are deliberately wide so a user can type 0 or a negative number and read why it is wrong,
instead of a spin box silently refusing it.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFileDialog, QFormLayout, QGroupBox, QLabel, QVBoxLayout, QWidget

from workbench.core.runs import config as cfg
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.model_defaults import (
    apply_model_defaults,
    full_finetune_for_random_weights,
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

# (group title, [(label, field), ...]); a binding for every field is made in _make_bindings.
_LAYOUT: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("Model", (("Model", "model"), ("Weights", "weights"), ("Weights file", "weights_file"),
               ("Fine-tune", "finetune"))),
    ("Crops", (("Crop mode", "crop_mode"), ("Crop strategy", "crop_strategy"),
               ("Resize (shorter side)", "resize_size"), ("Crop size", "crop_size"),
               ("Crop area share, min", "crop_scale_min"),
               ("Crop area share, max", "crop_scale_max"),
               ("Crop aspect ratio, min", "crop_ratio_min"),
               ("Crop aspect ratio, max", "crop_ratio_max"),
               ("", "train_hflip"))),
    ("Optimisation", (("Epochs", "epochs"), ("Batch size", "batch_size"),
                      ("Optimizer", "optimizer"), ("Learning rate", "lr"),
                      ("Momentum", "momentum"), ("Weight decay", "weight_decay"),
                      ("Scheduler", "scheduler"), ("Step size (epochs)", "lr_step_size"),
                      ("Gamma", "lr_gamma"), ("Class imbalance", "imbalance"),
                      ("Early stopping", "early_stopping"),
                      ("Patience (epochs)", "early_stopping_patience"))),
    ("Data and speed", (("Validation fraction", "val_fraction"), ("Loader workers", "workers"),
                        ("", "amp"), ("AMP precision", "amp_dtype"), ("", "channels_last"),
                        ("", "pin_memory"), ("", "cache_images"),
                        ("Image cache folder", "cache_dir"), ("", "cache_features"),
                        ("", "images_on_device"),
                        ("Max steps per epoch", "max_steps_per_epoch"))),
    ("Faults", (("Max failed images", "max_failed_images"),
                ("Loader timeout (s)", "loader_timeout"), ("", "oom_retry_smaller_batch"))),
    ("Reproducibility and output", (("Seed", "seed"), ("", "deterministic"),
                                    ("Output folder", "output_dir"), ("Run name", "run_name"))),
)


def _make_bindings() -> dict[str, Binding]:
    bindings: list[Binding] = [
        ComboBinding("model", cfg.MODELS),
        ComboBinding("weights", cfg.WEIGHTS),
        TextBinding("weights_file", "a state_dict .pt file", browse=True),
        ComboBinding("finetune", cfg.FINETUNE_MODES),
        ComboBinding("crop_mode", cfg.CROP_MODES),
        ComboBinding("crop_strategy", cfg.CROP_STRATEGIES),
        IntBinding("resize_size"),
        IntBinding("crop_size"),
        FloatBinding("crop_scale_min", decimals=6, step=0.05),
        FloatBinding("crop_scale_max", decimals=6, step=0.05),
        FloatBinding("crop_ratio_min", decimals=6, step=0.05),
        FloatBinding("crop_ratio_max", decimals=6, step=0.05),
        CheckBinding("train_hflip", "Random horizontal flip while training"),
        IntBinding("epochs"),
        IntBinding("batch_size"),
        ComboBinding("optimizer", cfg.OPTIMIZERS),
        FloatBinding("lr", scientific=True),
        FloatBinding("momentum", decimals=6, step=0.05),
        FloatBinding("weight_decay", scientific=True),
        ComboBinding("scheduler", cfg.SCHEDULERS),
        IntBinding("lr_step_size"),
        FloatBinding("lr_gamma", decimals=6, step=0.05),
        ComboBinding("imbalance", cfg.IMBALANCE_OPTIONS),
        ComboBinding("early_stopping", cfg.EARLY_STOPPING),
        IntBinding("early_stopping_patience"),
        FloatBinding("val_fraction", decimals=6, step=0.05),
        IntBinding("workers"),
        CheckBinding("amp", "Mixed precision (AMP, CUDA only)"),
        ComboBinding("amp_dtype", cfg.AMP_DTYPES),
        CheckBinding("channels_last", "channels_last memory format (CUDA only)"),
        CheckBinding("pin_memory", "Pinned memory for faster copies to the GPU"),
        CheckBinding("cache_images", "Cache resized images on disk (decode each file once)"),
        TextBinding("cache_dir", "empty: the user cache folder", browse=True),
        CheckBinding("cache_features", "Cache frozen-backbone features (last_layer)"),
        CheckBinding("images_on_device",
                     "Keep a small dataset on the device and crop it there in batches"),
        IntBinding("max_steps_per_epoch"),
        IntBinding("max_failed_images"),
        FloatBinding("loader_timeout", decimals=1, step=10.0),
        CheckBinding("oom_retry_smaller_batch",
                     "On GPU out of memory, retry with half the batch"),
        IntBinding("seed"),
        CheckBinding("deterministic", "Deterministic algorithms (slower)"),
        TextBinding("output_dir", "folder for run folders", browse=True),
        TextBinding("run_name", "optional; a timestamp is used when empty"),
    ]
    return {binding.field: binding for binding in bindings}


class ConfigForm(QWidget):
    """Edits one TrainConfig; fields the form does not show (data_root, device, resume) are kept.

    Signals:
        config_changed(TrainConfig): after every edit and after ``set_config``.
    """

    config_changed = Signal(object)

    def __init__(self, config: TrainConfig | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._config = config or TrainConfig()
        self._problems: list[str] = []
        self._bindings = _make_bindings()
        self._rows: dict[str, FieldRow] = {}
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
            self._set_field_from_dialog("weights_file", path)

    def _on_output_dir_browse(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Folder for runs", self._config.output_dir)
        if path:
            self._set_field_from_dialog("output_dir", path)

    def _on_cache_dir_browse(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Folder for resized images",
                                                self._config.cache_dir)
        if path:
            self._set_field_from_dialog("cache_dir", path)

    # ------------------------------------------------------------------ refreshes
    def _config_updated(self) -> None:
        """Everything that follows the config: problems, greyed-out fields, the cache line,
        and ``config_changed``."""
        self._update_problems()
        self._update_enabled_fields()
        self.cache_status.set_folder(self._config.cache_dir)
        self.config_changed.emit(self._config)

    def _update_problems(self) -> None:
        self._problems = self._config.validate()
        by_field: dict[str, list[str]] = {}
        for problem in self._problems:
            by_field.setdefault(problem.split(":", 1)[0].strip(), []).append(problem)
        for field, row in self._rows.items():
            row.set_problems(by_field.pop(field, []))
        leftover = [p for problems in by_field.values() for p in problems]
        self._other_problems.setText("\n".join(leftover))
        self._other_problems.setVisible(bool(leftover))

    def _update_enabled_fields(self) -> None:
        """Grey out fields the current choices ignore, unless they hold a problem to fix."""
        config = self._config
        relevant = {
            "weights_file": config.weights == "file",
            "lr_step_size": config.scheduler == "step",
            "lr_gamma": config.scheduler == "step",
            "momentum": config.optimizer == "sgd",
            "cache_features": config.finetune == "last_layer",
            "cache_dir": config.cache_images,
            "early_stopping_patience": config.early_stopping != "off",
        }
        for field, used in relevant.items():
            row = self._rows[field]
            row.setEnabled(used or bool(row.problems_text()))

    # ------------------------------------------------------------------ helpers
    def _build_layout(self) -> None:
        layout = QVBoxLayout(self)
        layout.addWidget(self._other_problems)
        layout.addWidget(self._defaults_note)
        for title, fields in _LAYOUT:
            group = QGroupBox(title, self)
            form = QFormLayout(group)
            form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
            for label, field in fields:
                row = FieldRow(self._bindings[field], group)
                row.setObjectName(f"field_{field}")
                self._rows[field] = row
                form.addRow(label, row)
                if field == "cache_dir":
                    form.addRow("", self.cache_status)
            layout.addWidget(group)
        layout.addStretch(1)

    def _browse_button(self, field: str):  # -> QPushButton
        binding = self._bindings[field]
        assert isinstance(binding, TextBinding) and binding.browse_button is not None
        return binding.browse_button

    def _set_field_from_dialog(self, field: str, value: str) -> None:
        self._bindings[field].set_value(value)
        self._on_field_changed(field)
