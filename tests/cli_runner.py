"""The `trajhub` command run inside the test process: `main(argv)` with an environment of its
own and its standard output and error captured, answered as `subprocess.run` would answer.

A command run as `python -m trajhub` pays a Python start and trajhub's imports each time, and
the suite runs the command many times (bench/README.md, "The test suite"). The console script is
`main` itself (pyproject.toml), so calling it is the command; tests/test_package.py runs the
installed entry points as processes, and the replay test that needs a terminal runs one too."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
from collections.abc import Iterator, Mapping

from trajhub.service.cli.main import main


@contextlib.contextmanager
def _environment(env: Mapping[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def run_cli(*argv: str, env: Mapping[str, str] | None = None,
            keep_trajhub_env: bool = False) -> subprocess.CompletedProcess[str]:
    """Run `trajhub argv…`; `env` is added to the test process's environment, from which the
    `TRAJHUB_*` variables are left out unless `keep_trajhub_env` (so a test's command reads
    only the settings it gives). Its exit status, stdout and stderr as a CompletedProcess."""
    base = {k: v for k, v in os.environ.items()
            if keep_trajhub_env or not k.startswith("TRAJHUB_")}
    # a text stdout over bytes, as a process has: `-o -` writes bytes to sys.stdout.buffer
    out_bytes = io.BytesIO()
    out = io.TextIOWrapper(out_bytes, encoding="utf-8", write_through=True)
    err = io.StringIO()
    with _environment({**base, **(env or {})}), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exit_:  # argparse: --help (0) and a usage mistake (2)
            code = exit_.code if isinstance(exit_.code, int) else 1
    out.flush()
    return subprocess.CompletedProcess(["trajhub", *argv], code,
                                       out_bytes.getvalue().decode(), err.getvalue())
