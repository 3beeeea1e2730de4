"""`python3 -m agentcompile.capture`: PyTorch models -> agentcompile capture directories (docs/capture.md).

  capture hf CHECKPOINT_DIR -o OUT [--dtype f16|bf16|f32] [--link-weights]
  capture hf --config CONFIG.json --random-weights [--seed N] -o OUT [--dtype ...]
  capture module FILE.py -o OUT [--class Model] [--dtype f32|f16] [--seed N] [--eval] [--no-example-data]

Errors print one line, `capture: <what went wrong> (<file.py:LINE in FUNC>)`, and exit 1; --debug
shows the Python traceback as well.
"""
from __future__ import annotations

import argparse
import logging
import pathlib
import sys
import traceback
import warnings

from .errors import CaptureError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="capture", description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true", help="show the Python traceback of an error")
    commands = parser.add_subparsers(dest="command", required=True)

    hf = commands.add_parser("hf", help="a Hugging Face causal LM: prefill and decode functions")
    hf.add_argument("checkpoint", nargs="?", type=pathlib.Path, help="checkpoint directory (config.json + safetensors)")
    hf.add_argument("--config", type=pathlib.Path, help="config.json of a model to build with random weights")
    hf.add_argument("--random-weights", action="store_true", help="with --config: seeded random weights")
    hf.add_argument("--seed", type=int, default=0)
    hf.add_argument("--dtype", choices=("f16", "bf16", "f32"), help="model dtype (default: the config's)")
    hf.add_argument("--link-weights", action="store_true",
                    help="write only the parameters the checkpoint lacks; read the rest from it")
    hf.add_argument("-o", "--out", type=pathlib.Path, required=True)
    hf.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)

    module = commands.add_parser("module", help="an nn.Module with get_inputs(): one forward function")
    module.add_argument("file", type=pathlib.Path)
    module.add_argument("--class", dest="class_name", default="Model")
    module.add_argument("--dtype", choices=("f32", "f16"), default="f32")
    module.add_argument("--seed", type=int, default=0)
    module.add_argument("--eval", action="store_true", help="capture in eval mode (dropout off, running stats)")
    module.add_argument("--static-shapes", action="store_true",
                        help="keep every dim static (default: dim 0 of the batch inputs is the symbol T where export allows)")
    module.add_argument("--no-example-data", action="store_true",
                        help="write neither inputs.safetensors nor reference_outputs.safetensors")
    module.add_argument("-o", "--out", type=pathlib.Path, required=True)
    module.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    return parser


def _check_installed(command: str) -> None:
    """What to install, said before anything imports it: torch always, transformers for `hf`."""
    import importlib.util
    needed = ["torch", "safetensors"] + (["transformers"] if command == "hf" else [])
    missing = [name for name in needed if importlib.util.find_spec(name) is None]
    if missing:
        names = " and ".join(missing)
        raise CaptureError(f"{names} {'is' if len(missing) == 1 else 'are'} not installed for {sys.executable}: "
                           f"pip install {' '.join(missing)}")


def run(args) -> str:
    if args.command == "hf":
        from .hf_causal_lm import capture_hf
        if (args.checkpoint is None) == (args.config is None):
            raise CaptureError("give a checkpoint directory or --config CONFIG.json --random-weights, not both")
        if args.config is not None and not args.random_weights:
            raise CaptureError("--config builds the model from scratch: add --random-weights")
        source = args.checkpoint or args.config
        if not source.exists():
            raise CaptureError(f"{source} does not exist")
        return capture_hf(args.out, checkpoint=args.checkpoint, config_path=args.config, dtype=args.dtype,
                          seed=args.seed, link_weights=args.link_weights)
    from .module_capture import capture_module
    return capture_module(args.file, args.out, class_name=args.class_name, dtype=args.dtype, seed=args.seed,
                          eval_mode=args.eval, example_data=not args.no_example_data, static_shapes=args.static_shapes)


def _quiet() -> None:
    """Keeps torch's and transformers' warnings and log lines (deprecations, graph dumps of a failed
    trace) off the terminal: the capture's own one-line error says what matters."""
    warnings.filterwarnings("ignore")
    import torch
    torch._logging.set_logs(all=logging.CRITICAL)
    for name in ("torch", "transformers"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        _check_installed(args.command)
        if not args.debug:
            _quiet()
        print(run(args))
        return 0
    except CaptureError as e:
        if args.debug:
            traceback.print_exc()
            print(e.details, file=sys.stderr, end="")
        print(f"capture: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # a bug in the capture itself: still one line unless --debug
        if args.debug:
            traceback.print_exc()
        print(f"capture: internal error: {type(e).__name__}: {e} (run with --debug for the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
