"""``workbench export`` and ``workbench predict``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    export = sub.add_parser("export", help="export a trained model to verified TorchScript "
                                           "(default) or ONNX")
    export.add_argument("model", help="a run folder, best_model.pt or a checkpoint (last.pt)")
    export.add_argument("-o", "--output",
                        help="output file (default: <run folder>/model_scripted.pt, or "
                             "model.onnx with --format onnx)")
    export.add_argument("--format", choices=("torchscript", "onnx"), default="torchscript",
                        help="torchscript (default) or onnx (needs pip install "
                             "'workbench[onnx]')")
    export.set_defaults(handler=_cmd_export)

    predict = sub.add_parser("predict", help="classify images with a trained or exported model")
    predict.add_argument("model", help="best_model.pt, a checkpoint, an exported TorchScript "
                                        "file or an ONNX export (needs onnxruntime); "
                                        "TorchScript is a program and runs when loaded, so use "
                                        "only files you trust")
    predict.add_argument("images", nargs="+",
                         help="image files or folders of images; one that is missing or "
                              "unreadable is reported and the rest are still classified "
                              "(exit status 1 if any failed)")
    predict.add_argument("--topk", type=int, default=3)
    predict.add_argument("--csv", help="also write the predictions to this CSV file")
    predict.set_defaults(handler=_cmd_predict)


def export_and_report(model_file: str, output: str, export_format: str = "torchscript") -> int:
    from workbench.core.models.checkpoint_format import CheckpointError
    from workbench.core.models.export import ExportError, export_model_file

    try:
        if export_format == "onnx":
            from workbench.core.models.onnx_export import export_model_file_onnx

            result = export_model_file_onnx(model_file, output)
        else:
            result = export_model_file(model_file, output)
    except (ExportError, CheckpointError, OSError) as exc:
        print(f"error: export failed: {exc}", file=sys.stderr)
        return 1
    print(f"exported {result.path} ({len(result.class_names)} classes, "
          f"{result.input_size}x{result.input_size} input) in {result.seconds:.1f} s")
    print(f"verified ({result.method}): {result.verification}")
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from workbench.core.runs.run_folder import BEST_MODEL, EXPORT_FILE, ONNX_FILE

    source = Path(args.model)
    default_name = ONNX_FILE if args.format == "onnx" else EXPORT_FILE
    if source.is_dir():
        if not (source / BEST_MODEL).is_file():
            print(f"error: {source} has no {BEST_MODEL}; is it a run folder?", file=sys.stderr)
            return 2
        output = args.output or str(source / default_name)
        source = source / BEST_MODEL
    else:
        output = args.output or str(source.with_name(default_name))
    return export_and_report(str(source), output, args.format)


def _cmd_predict(args: argparse.Namespace) -> int:
    from workbench.core.models.export import ExportError
    from workbench.core.models.prediction import (
        expand_image_paths,
        predict_images,
        write_predictions_csv,
    )

    images = expand_image_paths(args.images)
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
            print(f"{prediction.path}: error: {prediction.error}")
            continue
        ranked = ", ".join(f"{name} {prob:.3f}" for name, prob in prediction.top)
        print(f"{prediction.path}: {ranked}")
    if args.csv:
        try:
            write_predictions_csv(predictions, args.csv)
        except OSError as exc:
            print(f"error: cannot write {args.csv}: {exc}", file=sys.stderr)
            return 1
        print(f"wrote {args.csv}")
    return 1 if failed else 0
