#!/usr/bin/env python3
"""Captures many KernelBench problems in one process (torch is imported once, not once a problem).

Reads a JSON list of jobs {"file", "dtype", "seed", "out"} from argv[1] and prints one JSON line per job as
it finishes: {"out", "ok", "seconds", "message"}; a job that fails is reported and the next one runs.
bench/kernelbench.py runs it as a subprocess before touching CUDA, and captures any job it did not report
(this process died) one by one, as before.
"""
import json
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "python"))


def main() -> int:
    from agentcompile.capture import _quiet
    from agentcompile.errors import CaptureError
    from agentcompile.module_capture import capture_module
    _quiet()
    for job in json.loads(pathlib.Path(sys.argv[1]).read_text()):
        start = time.time()
        try:
            message = capture_module(pathlib.Path(job["file"]), pathlib.Path(job["out"]), dtype=job["dtype"],
                                     seed=job["seed"], example_data=False)
            ok = True
        except CaptureError as e:
            message, ok = f"capture: {e}", False
        except Exception as e:  # anything else is this problem's failure, not the batch's
            message, ok = f"capture: {type(e).__name__}: {e}", False
        print(json.dumps({"out": job["out"], "ok": ok, "seconds": round(time.time() - start, 2),
                          "message": message.splitlines()[0][:400] if message else ""}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
