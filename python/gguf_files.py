"""Writing GGUF files with gguf-py: the writer's three passes, and a new file that appears only whole."""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

from gguf import GGUFWriter


def write(writer: GGUFWriter) -> None:
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


@contextmanager
def new_gguf(path, arch: str):
    """A writer for `path`, which must not exist: it is written to `path`.tmp and renamed into place once
    complete, so a failure leaves no file at `path`."""
    path = Path(path)
    if path.exists():
        raise SystemExit(f"{path} exists; not overwriting it")
    temp = path.with_name(path.name + ".tmp")
    try:
        writer = GGUFWriter(str(temp), arch)
        yield writer
        write(writer)
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)
