"""The ImageNet weights download of a run, in the real window: a progress line in the status bar
that reaches 100%, and a Cancel that stops the run and leaves no partial file. The weights come
from a local HTTP server on 127.0.0.1 (see ``served_imagenet_weights``)."""

from __future__ import annotations

from PySide6.QtCore import Qt

from workbench.core.models.building import imagenet_weights_path
from workbench.gui.window.main_window import MainWindow

RUN_TIMEOUT_MS = 120_000


def test_the_download_shows_progress_to_100_percent_then_the_run_trains(
        qtbot, tiny_config, served_imagenet_weights, reraise_errors):
    window = MainWindow()
    qtbot.addWidget(window)
    window.show()
    reraise_errors(window.controller)
    window.config_form.set_config(
        tiny_config.replace(model="resnet18", weights="imagenet", epochs=1))
    shown: list[int] = []
    window.controller.progress_reported.connect(
        lambda _event: shown.append(window.download_bar.bar.value()))

    with qtbot.waitSignal(window.controller.run_ended, timeout=RUN_TIMEOUT_MS) as ended:
        assert window.start_training()
        qtbot.waitUntil(lambda: window.download_bar.isVisible(), timeout=RUN_TIMEOUT_MS)
    qtbot.waitUntil(lambda: not window.controller.is_running(), timeout=RUN_TIMEOUT_MS)

    assert ended.args[0].status == "completed", ended.args[0].error
    assert shown[0] == 0 and shown[-1] == 100 and shown == sorted(shown)
    assert imagenet_weights_path().read_bytes() == served_imagenet_weights.data
    assert not window.download_bar.isVisible()  # hidden once the run started
    assert "ImageNet weights loaded from" in window.log_panel.toPlainText()


def test_cancel_stops_the_download_and_the_run_leaving_no_partial_file(
        qtbot, tiny_config, served_imagenet_weights, reraise_errors):
    served_imagenet_weights.server.pause_s = 0.05  # about 9 s for the whole file
    window = MainWindow()
    qtbot.addWidget(window)
    window.show()
    reraise_errors(window.controller)
    window.config_form.set_config(
        tiny_config.replace(model="resnet18", weights="imagenet", epochs=1))

    with qtbot.waitSignal(window.controller.run_ended, timeout=RUN_TIMEOUT_MS) as ended:
        assert window.start_training()
        qtbot.waitUntil(lambda: window.download_bar.bar.value() >= 5, timeout=RUN_TIMEOUT_MS)
        assert "Downloading ImageNet weights" in window.download_bar.label.text()
        qtbot.mouseClick(window.download_bar.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not window.controller.is_running(), timeout=RUN_TIMEOUT_MS)

    assert ended.args[0].status == "cancelled" and ended.args[0].error == ""
    assert list(imagenet_weights_path().parent.iterdir()) == []
    assert not window.download_bar.isVisible()
    assert "Stopped on request while downloading" in window.log_panel.toPlainText()
