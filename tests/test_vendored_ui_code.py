"""The web UI's third-party code is served by trajhub itself: the copies under
service/ui/static/vendor are exactly what service/ui/vendor's lockfile installs from the npm
registry (update.sh copies them)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

VENDOR = Path(__file__).resolve().parent.parent / "service" / "ui" / "vendor"
SERVED = VENDOR.parent / "static" / "vendor"
#: served copy → the installed package's file it copies
COPIES = {"uplot/uPlot.esm.js": "uplot/dist/uPlot.esm.js",
          "uplot/uPlot.min.css": "uplot/dist/uPlot.min.css",
          "uplot/LICENSE": "uplot/LICENSE"}


def test_served_copies_are_what_the_lockfile_installs(tmp_path: Path) -> None:
    for name in ("package.json", "package-lock.json"):
        shutil.copy(VENDOR / name, tmp_path / name)
    subprocess.run(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"],
                   cwd=tmp_path, check=True, capture_output=True, timeout=300)
    served = sorted(str(p.relative_to(SERVED)) for p in SERVED.rglob("*") if p.is_file())
    assert served == sorted(COPIES)
    for copy, installed in COPIES.items():
        assert (SERVED / copy).read_bytes() == \
            (tmp_path / "node_modules" / installed).read_bytes(), copy
