"""What the supervisors of trajhub's child processes share: how a death is described in the
log, and how long to wait before the next restart."""

from __future__ import annotations

import signal
import time


def exit_cause(exitcode: int | None) -> str:
    """A process's exit code in words: "killed by SIGKILL", "exit status 1"."""
    if exitcode is None:
        return "still running"
    if exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit status {exitcode}"


class Backoff:
    """Restart delays that double with each death in quick succession (0.5 s up to
    `maximum`), and start over once the process has stayed up for `stable_seconds`."""

    def __init__(self, initial: float = 0.5, maximum: float = 30.0,
                 stable_seconds: float = 60.0) -> None:
        self.initial = initial
        self.maximum = maximum
        self.stable_seconds = stable_seconds
        self._delay = 0.0
        self._last_start = 0.0

    def next_delay(self) -> float:
        """The wait before restarting what just died."""
        if time.monotonic() - self._last_start > self.stable_seconds:
            self._delay = 0.0
        self._delay = self.initial if self._delay == 0 else min(self._delay * 2, self.maximum)
        return self._delay

    def started(self) -> None:
        self._last_start = time.monotonic()
