"""The Workbench main window: dataset and preview on the left, settings, training and results
on the right, Start / Pause / Stop always in reach.

Nothing imported here loads torch: the window must appear before it does. The two panels that
need pyqtgraph (the dataset panel's chart and the training plots; importing pyqtgraph takes about
a second) can be built just after the window is first shown (``build_now=False``, then
``build_plot_panels``). Training runs in the thread of
:class:`~workbench.gui.workers.training_worker.TrainingController`; device detection, scans,
previews and exports in the thread pool; the slots below only pass events to widgets.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QMainWindow,
    QMessageBox,
    QWidget,
)

from workbench.core.runs.config import ConfigError, TrainConfig, fields_set_in_config_file
from workbench.core.runs.events import RunEnd
from workbench.gui.panels.config_form import ConfigForm
from workbench.gui.panels.device_panel import DevicePanel
from workbench.gui.panels.first_run_panel import FirstRunPanel
from workbench.gui.panels.log_panel import LogPanel
from workbench.gui.panels.preview.augmentation_preview_panel import AugmentationPreviewPanel
from workbench.gui.panels.results_panel import ResultsPanel
from workbench.gui.panels.run_status_panel import RunStatusPanel
from workbench.gui.panels.training_controls import TrainingControls
from workbench.gui.widgets.download_progress_bar import DownloadProgressBar
from workbench.gui.widgets.elided_label import ElidedLabel
from workbench.gui.window.after_training_tabs import AfterTrainingTabs
from workbench.gui.window.device_tools import DeviceTools
from workbench.gui.window.help_menu import HelpMenu
from workbench.gui.window.lr_finder_action import LrFinderAction
from workbench.gui.window.main_window_layout import build_main_layout
from workbench.gui.window.model_picker_action import ModelPickerAction
from workbench.gui.window.preflight_controller import PreflightController
from workbench.gui.window.run_follow_controller import RunFollowController
from workbench.gui.window.run_views import RunViews
from workbench.gui.window.settings_store import SettingsStore, load_config_file, save_config_file
from workbench.gui.window.training_menu import TrainingMenu
from workbench.gui.window.window_geometry import size_window_to_screen
from workbench.gui.window.window_menu import FileMenu
from workbench.gui.workers.training_worker import TrainingController

DEVICE_STATUS_WIDTH = 700  # of the status bar; the rest is for its messages

if TYPE_CHECKING:  # both import pyqtgraph; see build_plot_panels
    from workbench.gui.panels.dataset.dataset_panel import DatasetPanel
    from workbench.gui.panels.training_plots import TrainingPlots


class MainWindow(QMainWindow):
    """The application window. Call ``start_background_tasks`` once it is shown.

    Args:
        settings: where the config, recent folders and layout are kept (QSettings by default).
        build_now: False leaves the dataset panel and the plots to ``build_plot_panels``, so the
            window can be shown first; the application does that, tests use the default.
    """

    def __init__(self, settings: SettingsStore | None = None, parent: QWidget | None = None,
                 build_now: bool = True) -> None:
        super().__init__(parent)
        self.setWindowTitle("Workbench")
        self.ask_before_closing_during_training = True
        self.close_timeout_s = 60.0
        self.last_error = ""
        self._settings = settings if settings is not None else SettingsStore()
        self._close_when_stopped = False
        self._out_of_memory_end: RunEnd | None = None  # offered a smaller batch on finish
        self.dataset_panel: DatasetPanel | None = None
        self.plots: TrainingPlots | None = None
        self.controller = TrainingController(self)
        self.preview_panel = AugmentationPreviewPanel()
        self.config_form = ConfigForm()
        self.device_panel = DevicePanel()
        self.controls = TrainingControls()
        self.status_panel = RunStatusPanel()
        self.log_panel = LogPanel()
        self.results_panel = ResultsPanel()
        self.device_status = ElidedLabel("Detecting devices\u2026")
        self.device_status.preferred_width = DEVICE_STATUS_WIDTH
        self.download_bar = DownloadProgressBar()
        self.file_menu = FileMenu(self)
        self.training_menu = TrainingMenu(self, self.controls)
        self.help_menu = HelpMenu(self, self.device_panel.choice_text)
        self.first_run_panel = FirstRunPanel()
        self.run_follow = RunFollowController(self)
        layout = build_main_layout(
            preview_panel=self.preview_panel, device_panel=self.device_panel,
            config_form=self.config_form, controls=self.controls, status_panel=self.status_panel,
            log_panel=self.log_panel, results_panel=self.results_panel)
        self.left_tabs, self.right_tabs = layout.left_tabs, layout.right_tabs
        self.training_tab = layout.training_tab
        self.dataset_page = layout.dataset_page
        self.dataset_placeholder = layout.dataset_placeholder
        self.plots_page = layout.plots_page
        self.plots_placeholder = layout.plots_placeholder
        self.dataset_page.layout().insertWidget(0, self.first_run_panel)
        self.setCentralWidget(layout.central)
        self.statusBar().addPermanentWidget(self.download_bar)
        self.statusBar().addPermanentWidget(self.device_status)
        self.training_tab.layout().insertWidget(0, self.run_follow.banner)
        self.after_training = AfterTrainingTabs(self)
        self.lr_finder = LrFinderAction(self)
        self.device_tools = DeviceTools(self)
        self.model_picker = ModelPickerAction(self)
        self.preflight = PreflightController(self, start_now=build_now)

        self.preview_panel.preview_failed.connect(self._on_preview_failed)
        self.config_form.config_changed.connect(self._on_config_changed)
        self.controls.start_button.clicked.connect(self._on_start_clicked)
        self.controls.pause_button.clicked.connect(self._on_pause_clicked)
        self.controls.stop_button.clicked.connect(self._on_stop_clicked)
        self.controls.keep_best_button.clicked.connect(self._on_keep_best_clicked)
        self.lr_finder.busy_changed.connect(self._update_controls)
        self.preflight.changed.connect(self._update_controls)
        self.run_views = RunViews(self)  # a local run's and a followed run's events
        self.controller.progress_reported.connect(self.download_bar.show_progress)
        self.download_bar.cancel_requested.connect(self._on_stop_clicked)
        self.controller.run_ended.connect(self._on_run_ended)
        self.controller.errored.connect(self._on_training_errored)
        self.controller.finished.connect(self._on_training_finished)
        self.results_panel.export_finished.connect(self._on_export_finished)
        self.results_panel.export_failed.connect(self._on_export_failed)
        self.first_run_panel.open_folder_requested.connect(self.file_menu.open_folder.trigger)
        self.first_run_panel.recent_folder_chosen.connect(self.open_folder)
        self.first_run_panel.demo_dataset_ready.connect(self._on_demo_dataset_ready)
        self.first_run_panel.demo_dataset_failed.connect(self._on_demo_dataset_failed)

        self._restore_settings()
        if build_now:
            self.build_plot_panels()
        self._update_controls()
        self._update_dataset_page()

    def build_plot_panels(self) -> None:
        """Create the dataset panel and the training plots (they import pyqtgraph); once."""
        if self.dataset_panel is not None:
            return
        from workbench.gui.panels.dataset.dataset_panel import DatasetPanel
        from workbench.gui.panels.training_plots import TrainingPlots

        self.dataset_panel = DatasetPanel()
        self.plots = TrainingPlots()
        self.dataset_panel.set_recent_folders(self._settings.recent_folders())
        config = self.config_form.config()
        self.dataset_panel.set_scan_options(config.val_fraction, config.seed, config.cache_dir,
                                            config.exclude_file)
        self.dataset_page.layout().addWidget(self.dataset_panel)
        self.plots_page.layout().addWidget(self.plots)
        self.dataset_placeholder.hide()
        self.plots_placeholder.hide()
        self._update_dataset_page()

        self.dataset_panel.folder_changed.connect(self._on_folder_changed)
        self.dataset_panel.dataset_scanned.connect(self._on_dataset_scanned)
        self.dataset_panel.scan_failed.connect(self._on_scan_failed)
        self.dataset_panel.image_selected.connect(self._on_image_selected)
        self.dataset_panel.imbalance_option_chosen.connect(self._on_imbalance_option_chosen)
        self.dataset_panel.exclude_file_chosen.connect(self._on_exclude_file_chosen)

    # ------------------------------------------------------------------ public API
    def start_background_tasks(self) -> None:
        """Work that may import torch: device detection, the pre-flight check of the settings
        and rescanning the last folder."""
        self.device_panel.start_detection()
        self.preflight.start()
        self.config_form.model_facts.load_in_background()
        dataset = self._dataset()
        root = self.config_form.config().data_root
        if root and not dataset.folder() and Path(root).is_dir():
            dataset.set_folder(root)

    def open_folder(self, path: str) -> None:
        """Scan ``path`` and train on it."""
        self._dataset().set_folder(str(path))

    def apply_config(self, config: TrainConfig) -> None:
        """Show ``config`` everywhere (form, device, dataset folder)."""
        self.config_form.set_config(config)
        self.device_panel.set_device(config.device)
        dataset = self._dataset()
        if config.data_root and config.data_root != dataset.folder() \
                and Path(config.data_root).is_dir():
            dataset.set_folder(config.data_root)

    def recent_folders(self) -> list[str]:
        """Dataset folders opened before, newest first."""
        if self.dataset_panel is None:
            return self._settings.recent_folders()
        return self.dataset_panel.recent_folders()

    def start_training(self) -> bool:
        """Start a run with the form's config; False (and nothing started) if it has problems."""
        config = self.config_form.config()
        if self.controller.is_running() or config.validate() or self.lr_finder.is_busy() \
                or self.preflight.blocks(config):
            return False
        self._settings.save_config(config)
        self.device_tools.cancel()  # both would compete for the GPU's memory
        self.status_panel.set_run_config(config)
        self.run_follow.stop("a run started on this computer; the plots show that run now")
        self.run_follow.hide_banner()
        self.run_views.clear()
        if config.resume:  # the epochs it continues after stay on the plots
            self.run_views.show_history(Path(config.resume).parent)
        self.status_panel.set_state("Starting\u2026 (loading PyTorch, the data and the model)")
        self.log_panel.append_text("info", f"Starting training on {config.data_root}")
        self.controller.start(config)
        self.right_tabs.setCurrentWidget(self.training_tab)
        self._update_controls()
        return True

    def follow_run(self, run_dir: str) -> bool:
        """Show the run that another machine writes into ``run_dir``, live, like a local run;
        False (with the reason shown) if it cannot be followed."""
        if self.controller.is_running():
            self.show_error("Cannot follow a run", "A run is training here; stop it first, "
                                                   "the plots can show one run at a time.")
            return False
        problem = self.run_follow.follow(run_dir)  # its first poll waits for the event loop
        if problem:
            self.show_error("Cannot follow that folder", problem)
            return False
        self.run_views.clear()
        self.status_panel.set_state("Following a run written elsewhere; waiting for its events")
        self.right_tabs.setCurrentWidget(self.training_tab)
        return True

    def load_config_from(self, path: str) -> bool:
        """Load a config file over the current settings: the fields the file sets change, the
        others (the data folder too) stay; a problem is shown and False returned."""
        try:
            loaded = load_config_file(path)
            names = fields_set_in_config_file(path)
        except ConfigError as exc:
            self.show_error("Cannot load config", str(exc))
            return False
        current = self.config_form.config()
        self.apply_config(current.replace(**{name: getattr(loaded, name) for name in names}))
        changed = [name for name in names if getattr(loaded, name) != getattr(current, name)]
        summary = (f"Loaded config {Path(path).name}: it sets {', '.join(names) or 'nothing'}"
                   f" ({len(changed)} changed); every other setting is kept.")
        self.log_panel.append_text("info", f"{summary} ({path})")
        self.statusBar().showMessage(summary, 15_000)
        return True

    def resume_from(self, checkpoint: str) -> bool:
        """Set up continuing the run that wrote ``checkpoint`` (its last.pt): the run's own
        settings with ``resume`` set, so Start trains the epochs it has not done yet."""
        run_dir = Path(checkpoint).parent
        try:
            config = TrainConfig.load(run_dir)
        except ConfigError as exc:
            self.show_error("Cannot resume", f"{checkpoint}: needs the run's config.json "
                                             f"beside it ({exc})")
            return False
        self.apply_config(config.replace(resume=str(checkpoint)))
        self.run_views.clear()
        done = self.run_views.show_history(run_dir)
        self.status_panel.set_state(f"Ready to resume: epochs 1\u2013{done} of this run are "
                                    f"shown; Start continues with epoch {done + 1}."
                                    if done else "Ready to resume: Start continues the run.")
        self.right_tabs.setCurrentWidget(self.training_tab)
        self.log_panel.append_text("info", f"Start continues the run in {run_dir} from "
                                           f"{Path(checkpoint).name}; raise Epochs to train "
                                           "longer than it was set to.")
        return True

    def save_config_to(self, path: str) -> bool:
        """Save the form's config as JSON; a problem is shown and False returned."""
        try:
            save_config_file(self.config_form.config(), path)
        except ConfigError as exc:
            self.show_error("Cannot save config", str(exc))
            return False
        self.log_panel.append_text("info", f"Saved config {path}")
        return True

    def confirm_stop_on_close(self) -> bool:
        """Ask whether to stop the run and close; tests patch this or the attribute above."""
        if not self.ask_before_closing_during_training:
            return True
        answer = QMessageBox.question(
            self, "Training is running",
            "Stop training and close? The last finished epoch is kept in the run folder.",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No,
        )
        return answer == QMessageBox.StandardButton.Yes

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt override
        if self.controller.is_running():
            if not self.confirm_stop_on_close():
                event.ignore()
                return
            self.controller.request_stop()
            self.status_panel.set_state("Stopping\u2026 the window closes when the run has.")
            self._update_controls()
            if not self.controller.wait_finished(self.close_timeout_s):
                self._close_when_stopped = True
                event.ignore()
                return
        self.device_tools.cancel()
        self.lr_finder.cancel()
        self.model_picker.cancel()
        self.preflight.cancel()
        self._settings.save(self.config_form.config(), self.recent_folders(), self)
        event.accept()

    # ------------------------------------------------------------------ dataset and form
    def _on_folder_changed(self, path: str) -> None:
        if self.config_form.config().data_root != path:
            self.config_form.update_config(data_root=path)
        self._settings.set_recent_folders(self.recent_folders())
        self.run_views.folder_opened(path)
        self._update_dataset_page()

    def _on_demo_dataset_ready(self, root: str) -> None:
        """Open the demo dataset with the demo settings, keeping the device and output folder."""
        from workbench.core.data.generated.demo_data import demo_config

        current = self.config_form.config()
        config = demo_config(root, output_dir=current.output_dir).replace(device=current.device)
        self.apply_config(config)
        self.log_panel.append_text("info", f"Opened the demo dataset in {root} with its "
                                           "settings; Start trains it.")

    def _on_demo_dataset_failed(self, message: str) -> None:
        self.show_error("Cannot create the demo dataset", message)

    def _on_dataset_scanned(self, scan: object) -> None:
        self.config_form.set_dataset_split(scan.layout != "flat")  # val_fraction splits "flat"
        self.log_panel.append_text("info", scan.describe())
        for warning in scan.warnings():
            self.log_panel.append_text("warning", warning)
        self.statusBar().showMessage(scan.describe(), 10_000)

    def _on_scan_failed(self, message: str) -> None:
        self.log_panel.append_text("error", message)

    def _on_image_selected(self, path: str) -> None:
        self.preview_panel.set_image(path)
        self.left_tabs.setCurrentWidget(self.preview_panel)

    def _on_imbalance_option_chosen(self, option: str) -> None:
        self.config_form.update_config(imbalance=option)
        self.log_panel.append_text("info", f"Class imbalance: training will use {option}.")

    def _on_exclude_file_chosen(self, path: str) -> None:
        self.config_form.edit_field("exclude_file", path)
        self.log_panel.append_text("info", f"Training leaves out the files listed in {path}."
                                   if path else "Training uses every image again.")

    def _on_preview_failed(self, message: str) -> None:
        self.log_panel.append_text("warning", f"Preview: {message}")

    def _on_config_changed(self, config: TrainConfig) -> None:
        self.preview_panel.set_config(config)
        if self.dataset_panel is not None:
            self.dataset_panel.set_scan_options(config.val_fraction, config.seed,
                                                config.cache_dir, config.exclude_file)
        if not self.controller.is_running():
            self.device_tools.check_memory(config)
        self._update_controls()

    # ------------------------------------------------------------------ training
    def _on_start_clicked(self) -> None:
        self.start_training()

    def _on_pause_clicked(self) -> None:
        if self.controller.is_paused():
            self.controller.resume()
            self.status_panel.set_state("Training")
        else:
            self.controller.pause()
            self.status_panel.set_state("Paused: the run waits before its next step")
        self._update_controls()

    def _on_stop_clicked(self) -> None:
        self.controller.request_stop()
        self.status_panel.set_state("Stopping\u2026 (after the current step)")
        self._update_controls()

    def _on_keep_best_clicked(self) -> None:
        self.controller.request_stop_keep_best()
        self.status_panel.set_state("Finishing this epoch, then stopping: the best epoch "
                                    "becomes the run's result")
        self._update_controls()

    def _on_run_ended(self, event: RunEnd) -> None:
        self.download_bar.finish()
        if self.config_form.config().resume:  # resuming is for that one run; Start starts anew
            self.config_form.update_config(resume="")
        self._plots().flush()
        self.status_panel.show_run_end(event)
        self.results_panel.show_run_end(event)
        self.statusBar().showMessage(f"Training {event.status}", 10_000)
        if event.status == "completed":
            self.right_tabs.setCurrentWidget(self.results_panel)
        elif event.status == "failed" and event.retry_batch_size:
            self._out_of_memory_end = event  # the offer waits until the thread has finished
        elif event.status == "failed" and event.error:  # the log has it already
            self._open_warning_box("Training failed", event.error)

    def _on_training_errored(self, message: str) -> None:
        self.log_panel.append_text("error", message)
        self.status_panel.set_state(f"Failed: {message}")

    def _on_training_finished(self) -> None:
        self._update_controls()
        if self._close_when_stopped:
            self.close()
            return
        end, self._out_of_memory_end = self._out_of_memory_end, None
        if end is not None and self.confirm_retry_smaller_batch(end):
            self.config_form.update_config(batch_size=end.retry_batch_size)
            self.log_panel.append_text("info", f"Restarting with batch size "
                                               f"{end.retry_batch_size}.")
            self.start_training()

    def confirm_retry_smaller_batch(self, end: RunEnd) -> bool:
        """Ask whether to train again with ``end.retry_batch_size`` after running out of memory;
        tests replace this method to accept or decline programmatically."""
        answer = QMessageBox.question(
            self, "Out of memory",
            f"Training failed: {end.error}\n\nRetry with batch {end.retry_batch_size}?",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.Yes,
        )
        return answer == QMessageBox.StandardButton.Yes

    def _on_export_finished(self, result: object) -> None:
        self.log_panel.append_text("info", f"Exported and verified {result.path}")

    def _on_export_failed(self, message: str) -> None:
        self.log_panel.append_text("error", f"Export failed: {message}")

    # ------------------------------------------------------------------ refreshes
    def _update_dataset_page(self) -> None:
        """The first-run page while no data folder is open (or about to be rescanned)."""
        folder = self.dataset_panel.folder() if self.dataset_panel is not None else ""
        root = self.config_form.config().data_root
        first_run = not folder and not (root and Path(root).is_dir())
        self.first_run_panel.setVisible(first_run)
        if first_run:
            self.first_run_panel.set_recent_folders(self.recent_folders())
        if self.dataset_panel is not None:
            self.dataset_panel.setVisible(not first_run)
        else:
            self.dataset_placeholder.setVisible(not first_run)

    def _update_controls(self) -> None:
        running = self.controller.is_running()
        check = self.preflight.state()
        self.controls.set_state(running, self.controller.is_paused(),
                                self.controller.stop_requested(), check.problems,
                                self.controller.stop_keep_best_requested(),
                                self.lr_finder.busy_reason() or check.busy, check.checking,
                                check.notes, check.short_texts)
        self.lr_finder.set_training(running)
        self.config_form.setEnabled(not running)
        self.device_panel.setEnabled(not running)
        self.file_menu.set_training(running)
        self.training_menu.update_state()

    # ------------------------------------------------------------------ helpers
    def _dataset(self) -> DatasetPanel:
        self.build_plot_panels()
        assert self.dataset_panel is not None
        return self.dataset_panel

    def _plots(self) -> TrainingPlots:
        self.build_plot_panels()
        assert self.plots is not None
        return self.plots

    def _restore_settings(self) -> None:
        config = self._settings.load_config()
        self.config_form.set_config(config)
        self.device_panel.set_device(config.device)
        size_window_to_screen(self, restored=self._settings.restore_window(self))

    def show_error(self, title: str, text: str) -> None:
        """Log ``text`` and show it in a window-modal box that does not block the caller."""
        self.log_panel.append_text("error", text)
        self._open_warning_box(title, text)

    def _open_warning_box(self, title: str, text: str) -> None:
        self.last_error = text
        box = QMessageBox(QMessageBox.Icon.Warning, title, text, QMessageBox.StandardButton.Ok,
                          self)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()

