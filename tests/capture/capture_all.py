"""Regenerate every multi-agent capture and the ground truth (see tests/capture/README.md).

  python -m tests.capture.capture_all [--clients openinference,...] [--shapes parallel_tools,...]

Runs each Python capture in its own process (tests.capture.run_python), the JS captures through
node (tests/capture/js/run.mjs) when a JS client (cozeloop_js, openinference_js, traceloop_js) is
asked for, and rewrites the ground truth from the scripts.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from tests.capture import ground_truth, script
from tests.capture.run_python import CLIENTS

REPO = Path(__file__).parent.parent.parent
JS = Path(__file__).parent / "js"
MODES = ("stream", "invoke")
#: the JS clients (tests/capture/js/run.mjs <shape> <mode> <client>)
JS_CLIENTS = ("cozeloop_js", "openinference_js", "traceloop_js")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", default=",".join((*CLIENTS, *JS_CLIENTS)))
    parser.add_argument("--shapes", default=",".join(script.SHAPES))
    args = parser.parse_args()
    clients, shapes = args.clients.split(","), args.shapes.split(",")
    # CAPTURE_PYTHON: the python the JS mcp_tools agent starts the MCP server with (this one)
    env = {**os.environ, "PYTHONPATH": str(REPO), "CAPTURE_PYTHON": sys.executable}
    failed = []
    for client in clients:
        if client in JS_CLIENTS:
            script.write_json()
            for shape in shapes:
                if shape in script.PYTHON_ONLY:
                    continue  # no JS twin (README.md, "Shapes not captured")
                for mode in MODES:
                    cmd = ["node", str(JS / "run.mjs"), shape, mode, client]
                    if subprocess.run(cmd, cwd=JS, env=env).returncode:
                        failed.append(f"{client} {shape} {mode}")
            continue
        for shape in shapes:
            for mode in MODES:
                cmd = [sys.executable, "-m", "tests.capture.run_python", "--instr", client,
                       "--shape", shape, "--mode", mode]
                if subprocess.run(cmd, cwd=REPO, env=env).returncode:
                    failed.append(f"{client} {shape} {mode}")
    for path in ground_truth.write_all():
        print("ground truth:", path.relative_to(REPO))
    if failed:
        print("FAILED:", *failed, sep="\n  ")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
