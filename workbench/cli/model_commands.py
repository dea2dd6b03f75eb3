"""``workbench export`` and ``workbench predict``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workbench.core.models.export_formats import (
    DEFAULT_FILE_NAMES,
    EXPORT_FORMATS,
    model_file_in_run_folder,
)


def register(sub: argparse._SubParsersAction) -> None:
    export = sub.add_parser("export", help="export a trained model (TorchScript, ONNX float32, "
                                           "INT8 or float16), measured on this machine")
    export.add_argument("model", help="a run folder, best_model.pt or a checkpoint (last.pt)")
    export.add_argument("-o", "--output",
                        help="output file (default: beside the model, "
                             f"{', '.join(DEFAULT_FILE_NAMES.values())} by format)")
    export.add_argument("--format", choices=tuple(EXPORT_FORMATS), default="torchscript",
                        help="; ".join(f"{name}: {text}" for name, text in
                                       EXPORT_FORMATS.items())
                        + ". Every file is measured here (size, accuracy against float32 on "
                          "the run's validation images, latency, images/s) and the figures "
                          "go to export_report.json beside it")
    export.set_defaults(handler=_cmd_export)

    predict = sub.add_parser("predict", help="classify images with a trained or exported model")
    predict.add_argument("model", help="a run folder (its best_model.pt, or its export where "
                                        "the checkpoint is gone), best_model.pt, a checkpoint "
                                        "(last.pt), an exported TorchScript file or an ONNX "
                                        "export (needs onnxruntime); TorchScript is a program "
                                        "and runs when loaded, so use only files you trust")
    predict.add_argument("images", nargs="+",
                         help="image files or folders of images; one that is missing or "
                              "unreadable is reported and the rest are still classified "
                              "(exit status 1 if any failed)")
    predict.add_argument("--topk", type=int, default=3, metavar="K",
                         help="how many of the most likely classes to print for each image "
                              "(default 3)")
    predict.add_argument("--csv", help="also write the predictions to this CSV file")
    predict.set_defaults(handler=_cmd_predict)


def export_and_report(model_file: str, output: str, export_format: str = "torchscript") -> int:
    """Export, measure and print the verdict, then the details; 0 when written and verified,
    1 otherwise."""
    from workbench.core.models.deployment import export_and_measure
    from workbench.core.models.export_files import ExportError

    try:
        result = export_and_measure(model_file, output, export_format,
                                    on_progress=lambda text: print(f"{text} ...", flush=True))
    except (ExportError, OSError) as exc:
        print(f"error: export failed: {exc}", file=sys.stderr)
        return 1
    print("\n".join(result.lines()))
    return 0 if result.figures.verified else 1


def _cmd_export(args: argparse.Namespace) -> int:
    source = Path(args.model)
    default_name = DEFAULT_FILE_NAMES[args.format]
    if source.is_dir():
        try:
            source = model_file_in_run_folder(source, exports_too=False)
        except FileNotFoundError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        output = args.output or str(source.with_name(default_name))
    else:
        output = args.output or str(source.with_name(default_name))
    return export_and_report(str(source), output, args.format)


def _cmd_predict(args: argparse.Namespace) -> int:
    from workbench.core.file_names import shown_name
    from workbench.core.models.export import ExportError
    from workbench.core.models.prediction import (
        expand_image_inputs,
        predict_images,
        write_predictions_csv,
    )

    images, empty_folders = expand_image_inputs(args.images)
    for folder in empty_folders:
        print(f"warning: {shown_name(folder)}: no images in this folder or its subfolders",
              file=sys.stderr)
    if not images:
        print(f"error: no images in {', '.join(args.images)}", file=sys.stderr)
        return 2
    try:
        predictions = predict_images(args.model, images, topk=args.topk)
    except ExportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    failed = 0
    for prediction in predictions:
        if prediction.error:
            failed += 1
            print(f"{shown_name(prediction.path)}: error: {shown_name(prediction.error)}")
            continue
        ranked = ", ".join(f"{shown_name(name)} {prob:.3f}" for name, prob in prediction.top)
        print(f"{shown_name(prediction.path)}: {ranked}")
    if args.csv:
        try:
            write_predictions_csv(predictions, args.csv)
        except OSError as exc:
            print(f"error: cannot write {args.csv}: {exc}", file=sys.stderr)
            return 1
        print(f"wrote {args.csv}")
    return 1 if failed else 0
