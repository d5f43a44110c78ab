"""Child processes die with `trajhub serve`.

A worker (ingest or derivation) that outlives its parent holds database connections and keeps
writing for a server that no longer answers anyone. Each worker calls `die_with_parent()` first
thing: on Linux the kernel sends it SIGKILL when the parent dies (PR_SET_PDEATHSIG, even after
a kill -9 of the parent), and a watchdog thread covers the rest (other platforms, and a parent
that died before the call).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import signal
import sys
import threading
import time

log = logging.getLogger("trajhub.lifeline")

_PR_SET_PDEATHSIG = 1
WATCH_INTERVAL_SECONDS = 1.0


def _set_parent_death_signal() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except OSError as exc:  # no libc to load: the watchdog still covers it
        log.debug("prctl(PR_SET_PDEATHSIG) unavailable: %s", exc)


def die_with_parent(parent_pid: int) -> None:
    """Exit when the process `parent_pid` is no longer this process's parent."""
    _set_parent_death_signal()
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(WATCH_INTERVAL_SECONDS)
            if os.getppid() != parent_pid:
                os._exit(1)

    threading.Thread(target=watch, name="trajhub-lifeline", daemon=True).start()
