"""``workbench devices`` and ``workbench bench``."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    devices = sub.add_parser("devices", help="list devices and say which one training would use")
    devices.set_defaults(handler=_cmd_devices)

    bench = sub.add_parser("bench", help="run the benchmarks: a table of side-by-side ratios "
                                         "against the targets, also written as JSON")
    bench.add_argument("--quick", action="store_true",
                       help="small sizes, a smoke test in under a minute (figures mean little)")
    bench.add_argument("--only", help="comma-separated groups: loader,training,worker,ui")
    bench.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    bench.add_argument("-o", "--output", help="JSON file or folder (default ./bench.json)")
    bench.set_defaults(handler=_cmd_bench)


def _cmd_devices(args: argparse.Namespace) -> int:
    from workbench.core.devices.selection import describe_device_choice, list_devices

    for device in list_devices():
        print(device.label)
    print(describe_device_choice("auto"))
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from workbench.bench.suite import run_from_cli

    command = ["workbench", "bench"]
    if args.quick:
        command.append("--quick")
    for flag, value in (("--only", args.only), ("--device", args.device),
                        ("--output", args.output)):
        if value and value != "auto":
            command += [flag, value]
    return run_from_cli(args, " ".join(command))
