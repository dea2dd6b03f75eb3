"""The pre-flight check in the real window: Start waits for the check of the current settings,
then stays disabled with the reason beside it for a folder or an output folder the run would
refuse, is enabled with a note for an oversize batch, and offers the ImageNet download up
front, with a way to train without it when the download fails."""

from __future__ import annotations

from pathlib import Path

import pytest
import torchvision

from workbench.core.data.generated.synthetic_images import write_shape_dataset
from workbench.core.models import building
from workbench.core.runs.config import TrainConfig
from workbench.core.runs.model_catalog import scratch_recipe
from workbench.gui.panels.training_controls import CHECKING_TEXT

CHECK_MS = 30_000

RESNET_SCRATCH = scratch_recipe("resnet18")  # ResNet's recipe from random weights


@pytest.fixture
def good_folder(tmp_path: Path) -> Path:
    """Two classes of 10 images: 8 train / 2 val each in the automatic split, 16 in all."""
    return write_shape_dataset(tmp_path / "good", classes=("circle", "square"), per_class=10,
                               size=(16, 16))


@pytest.fixture
def config(good_folder: Path, tmp_path: Path) -> TrainConfig:
    return TrainConfig(data_root=str(good_folder), model="small_cnn", weights="none",
                       finetune="full", crop_mode="standard", resize_size=16, crop_size=16,
                       batch_size=8, workers=0, device="cpu", amp=False,
                       output_dir=str(tmp_path / "runs"))


def wait_for_check(qtbot, window) -> None:
    qtbot.waitUntil(lambda: not window.preflight.state().checking, timeout=CHECK_MS)


def start_line(window) -> str:
    return window.controls.problem_label.text()


def assert_checking(window) -> None:
    """Right after a change: Start off until the check of these settings answers."""
    assert start_line(window) == CHECKING_TEXT
    assert not window.controls.start_button.isEnabled()


def assert_startable(qtbot, window) -> None:
    wait_for_check(qtbot, window)
    assert window.controls.start_button.isEnabled(), start_line(window)
    assert start_line(window) == ""


def open_good_folder(qtbot, window, config: TrainConfig) -> None:
    window.apply_config(config)
    assert_checking(window)
    assert_startable(qtbot, window)


def test_an_empty_folder_disables_start_with_its_reason(qtbot, window, config, good_folder,
                                                        tmp_path):
    open_good_folder(qtbot, window, config)
    empty = tmp_path / "empty"
    empty.mkdir()

    window.open_folder(str(empty))
    assert_checking(window)
    wait_for_check(qtbot, window)
    assert not window.controls.start_button.isEnabled()
    reason = ("Data folder (data_root): no class subfolders; put each class's images in a folder "
              f"of its own ({empty}/<class>/image.jpg) (in {empty})")
    assert start_line(window) == f"Cannot start: {reason}"
    assert window.controls.problem_label.toolTip() == reason
    assert not window.start_training() and not window.controller.is_running()

    window.open_folder(str(good_folder))
    assert_checking(window)
    assert_startable(qtbot, window)


def test_one_class_disables_start_with_its_reason(qtbot, window, config, good_folder, tmp_path):
    open_good_folder(qtbot, window, config)
    one = write_shape_dataset(tmp_path / "one", classes=("circle",), per_class=6, size=(16, 16))

    window.open_folder(str(one))
    assert_checking(window)
    wait_for_check(qtbot, window)
    assert not window.controls.start_button.isEnabled()
    assert start_line(window) == ("Cannot start: Data folder (data_root): needs at least 2 class "
                                  "folders, found 1 ('circle'); a classifier tells classes "
                                  "apart, so add a folder of images for each other class "
                                  f"(in {one})")

    window.open_folder(str(good_folder))
    assert_startable(qtbot, window)


def test_an_output_folder_that_cannot_be_made_disables_start(qtbot, window, config, tmp_path):
    # A file where a folder must go: no user, root included, can make the folder there.
    open_good_folder(qtbot, window, config)
    blocker = tmp_path / "notes.txt"
    blocker.write_text("a file")

    window.config_form.edit_field("output_dir", str(blocker / "runs"))
    assert_checking(window)
    wait_for_check(qtbot, window)
    assert not window.controls.start_button.isEnabled()
    assert start_line(window) == (
        f"Cannot start: Output folder (output_dir): '{blocker}' is a file, not a folder, so "
        f"'{blocker / 'runs'}' cannot be created; choose another folder for the runs")
    assert not blocker.with_name("runs").exists() and blocker.read_text() == "a file"

    window.config_form.edit_field("output_dir", str(tmp_path / "runs"))
    assert_startable(qtbot, window)


def test_a_batch_larger_than_the_training_set_is_a_note_and_start_stays_enabled(
        qtbot, window, config):
    open_good_folder(qtbot, window, config)

    window.config_form.edit_field("batch_size", 64)
    assert_checking(window)
    wait_for_check(qtbot, window)
    assert window.controls.start_button.isEnabled()
    # The run's own sentence, as its log will say it.
    assert start_line(window) == ("Note: Batch size (batch_size) 64 is more than the 16 training "
                                  "images, so the run trains with a batch of 16: one step an "
                                  "epoch, every image in it.")

    window.config_form.edit_field("batch_size", 16)  # all of them: nothing to say
    assert_startable(qtbot, window)


def imagenet_download_text() -> str:
    """The size torchvision's metadata gives (in MiB), in the decimal MB downloads count."""
    mib = torchvision.models.ResNet18_Weights.IMAGENET1K_V1.meta["_file_size"]
    return f"{mib * 2**20 / 1e6:.1f} MB"


def test_missing_imagenet_weights_are_offered_for_download_with_their_size(
        qtbot, window, config, tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    window.apply_config(config.replace(model="resnet18", weights="imagenet",
                                       finetune="last_layer"))
    wait_for_check(qtbot, window)
    offer = window.controls.weights_offer
    assert window.controls.start_button.isEnabled()  # Start would download them itself
    assert start_line(window) == "Note: the ImageNet weights are not on this computer yet"
    assert f"will be downloaded at Start into '{tmp_path / 'torch' / 'hub' / 'checkpoints'}'" \
        in window.controls.problem_label.toolTip()
    assert offer.isVisible() and offer.download_button.isVisible()
    assert offer.download_button.text() == f"Download {imagenet_download_text()}" \
        == "Download 46.8 MB"
    assert not offer.fallback_button.isVisible()


def test_the_download_shows_progress_then_start_needs_no_download(
        qtbot, window, config, served_imagenet_weights):
    served_imagenet_weights.server.pause_s = 0.02  # a few progress steps
    window.apply_config(config.replace(model="resnet18", weights="imagenet",
                                       finetune="last_layer"))
    wait_for_check(qtbot, window)
    offer = window.controls.weights_offer
    shown: list[int] = []
    offer.bar.valueChanged.connect(shown.append)

    offer.download_button.click()
    assert not window.controls.start_button.isEnabled()  # one download at a time
    assert start_line(window) == "Cannot start: downloading the ImageNet weights"
    assert offer.bar.isVisible() and offer.cancel_button.isVisible()
    qtbot.waitUntil(lambda: not offer.isVisible(), timeout=CHECK_MS)
    assert_startable(qtbot, window)

    assert building.imagenet_weights_path().read_bytes() == served_imagenet_weights.data
    assert shown[-1] == 100 and shown == sorted(shown) and len(set(shown)) >= 3
    assert "Downloaded the ImageNet weights to" in window.log_panel.toPlainText()


def test_an_offline_download_says_so_and_trains_without_it(qtbot, window, config, tmp_path,
                                                          monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    name = building.imagenet_weights_url().rsplit("/", 1)[1]
    # Port 9 of this computer: nothing listens, the connection is refused as offline.
    monkeypatch.setattr(building, "imagenet_weights_url",
                        lambda _model="resnet18": f"http://127.0.0.1:9/{name}")
    window.apply_config(config.replace(model="resnet18", weights="imagenet",
                                       finetune="last_layer"))
    wait_for_check(qtbot, window)
    offer = window.controls.weights_offer

    offer.download_button.click()
    qtbot.waitUntil(lambda: offer.fallback_button.isVisible(), timeout=CHECK_MS)
    assert not window.controls.start_button.isEnabled()  # the run would fail the same way
    assert start_line(window) == "Cannot start: download failed"
    tooltip = window.controls.problem_label.toolTip()
    assert "the ImageNet weights could not be downloaded (" in tooltip
    assert "is this computer offline?" in tooltip and f"Copy the file '{name}'" in tooltip
    assert offer.download_button.text() == "Try again"
    assert offer.fallback_button.text() == "Train without downloading"
    assert offer.fallback_button.toolTip().startswith(
        "Starting weights become None (a random start), Fine-tune becomes Whole network and")
    assert not (tmp_path / "torch" / "hub" / "checkpoints" / name).exists()

    offer.fallback_button.click()
    changed = window.config_form.config()
    assert (changed.model, changed.weights, changed.finetune) == ("resnet18", "none", "full")
    # The optimiser follows: the from-scratch recipe, said under the form as choosing None is.
    assert {name: getattr(changed, name) for name in RESNET_SCRATCH} == RESNET_SCRATCH
    assert "the recipe for training every layer from random weights" in \
        window.config_form.defaults_note_text()
    assert_startable(qtbot, window)
    assert not offer.isVisible()
    assert "Training without downloading: Starting weights become None" in \
        window.log_panel.toPlainText()


def test_a_check_whose_import_races_another_thread_still_answers(qtbot, window, config,
                                                                monkeypatch):
    """Another pool job importing torchvision at the same moment makes Python hand this one a
    partly initialised module; the check is tried again rather than failing."""
    from workbench.gui.window import preflight_controller

    real_import = preflight_controller.importlib.import_module
    raised: list[str] = []

    def racing_import(name: str):
        if not raised:
            raised.append(name)
            raise ImportError("cannot import name 'InterpolationMode' from partially "
                              "initialized module 'torchvision.transforms'")
        return real_import(name)

    monkeypatch.setattr(preflight_controller.importlib, "import_module", racing_import)
    monkeypatch.setattr(preflight_controller, "IMPORT_RETRY_S", 0.01)
    window.apply_config(config)
    assert_startable(qtbot, window)
    assert raised == ["workbench.core.training.tuning.preflight"]


def test_the_first_run_page_offers_the_weights_before_any_folder_is_open(
        qtbot, window, served_imagenet_weights):
    served_imagenet_weights.server.pause_s = 0.005  # still a download in progress at the click
    page = window.first_run_panel
    assert window.config_form.config().weights == "imagenet" and page.isVisible()
    wait_for_check(qtbot, window)
    assert page.weights_button.isVisible() and page.weights_button.text() == "Download the weights"
    # The real file's size, not the served one's.
    assert page.weights_button.description().startswith(
        f"{imagenet_download_text()} of ImageNet weights, which ResNet-18 starts from")

    page.weights_button.click()
    assert not page.weights_button.isEnabled()
    assert page.weights_button.text() == "Downloading\u2026"
    assert window.controls.weights_offer.bar.isVisible()  # the progress, beside Start
    qtbot.waitUntil(lambda: not page.weights_button.isVisible(), timeout=CHECK_MS)
    assert building.imagenet_weights_path().read_bytes() == served_imagenet_weights.data
    wait_for_check(qtbot, window)
    assert not window.controls.weights_offer.isVisible()
