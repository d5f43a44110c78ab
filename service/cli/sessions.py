"""`trajhub sessions list|show`: a running server's sessions (the runs sharing a session id),
as a table and as a transcript for people, and `--json` for machines."""

from __future__ import annotations

import argparse
from typing import Any

from trajhub.records.sessions import SessionQuery, SessionSummary
from trajhub.service.cli.common import Command, connect, duration, print_json, when
from trajhub.service.cli.reads import add_filter_flags, add_paging, page_action
from trajhub.service.client.api import TrajhubClient


def _usd(cost: Any) -> str:
    """A session's or turn's money as the CLI prints it: `$0.000123`, or `unknown` when a
    model had no price."""
    if cost is None or cost.usd is None:
        return "cost unknown" + (f" (no price for {', '.join(cost.unpriced_models)})"
                                 if cost is not None and cost.unpriced_models else "")
    text = f"${cost.usd:.6f}"
    return text if cost.complete else f"{text} + unknown (no price for " \
                                      f"{', '.join(cost.unpriced_models)})"


_list = page_action(TrajhubClient.list_sessions, (*SessionQuery.names(), "sort"),
                    SessionSummary, "sessions")


def _indented(who: str, text: str | None) -> list[str]:
    if text is None:
        return [f"  {who}: (not recorded)"]
    lines = text.splitlines() or [""]
    return [f"  {who}: {lines[0]}", *(f"  {' ' * len(who)}  {line}" for line in lines[1:])]


def _show(args: argparse.Namespace) -> int:
    with connect(args) as hub:
        session = hub.get_session(args.session_id, limit=args.limit)
    if args.json:
        print_json({"session_id": session.session_id, "summary": session.summary.model_dump(),
                    "turns": [t.model_dump() for t in session.turns],
                    "truncated": session.truncated})
        return 0
    s = session.summary
    print(f"session {session.session_id}: {s.turns} turn{'s' if s.turns != 1 else ''}, "
          f"{when(s.start_time)} to {when(s.end_time)}, "
          f"{s.input_tokens}+{s.output_tokens} tokens, {_usd(s.cost)}, "
          f"{s.failed_turns} failed" + (", waiting for a person" if s.waiting else ""))
    for number, turn in enumerate(session.turns, 1):
        failed = ", FAILED" if turn.has_error or turn.derivation_error else ""
        # LangGraph's interrupt() ended the turn; a later turn resumes it
        failed += ", INTERRUPTED" if turn.interrupted else ""
        print(f"\nturn {number}  {when(turn.start_time)}  {turn.status}{failed}  "
              f"{duration(turn.duration_ms)}  {turn.input_tokens}+{turn.output_tokens} tokens  "
              f"{_usd(turn.cost)}  trace {turn.trace_id}")
        print("\n".join(_indented("user", turn.input)))
        print("\n".join(_indented("assistant", turn.output)))
        if turn.derivation_error:
            print(f"  not derived: {turn.derivation_error}")
    if session.truncated:
        print(f"\n(the first {len(session.turns)} of {s.turns} turns: --limit shows more)")
    return 0


def register(sub: Any) -> None:
    """Add `sessions list|show` to the `trajhub` subcommands."""
    ss = Command(sub, "sessions", help="list sessions and read one as a transcript",
                 description="Sessions: the runs (trajectories) of a project that "
                             "share a session, conversation or thread id.")
    p = ss.action("list", _list, help="sessions, latest turn first",
                  description="Sessions, the one whose latest turn started last first; the "
                              "flags are the filters of GET /api/v1/sessions.")
    add_filter_flags(p, SessionQuery)
    p.add_argument("--sort", metavar="score:NAME",
                   help="by the sessions' mean of a score, highest first (only those with one)")
    add_paging(p)
    p = ss.action("show", _show, help="one session as a transcript",
                  description="One session's turns in order: for each, the user's text and "
                              "the answer, its status, tokens, cost and trace id.")
    p.add_argument("session_id")
    p.add_argument("--limit", type=int, help="at most this many turns, the first ones "
                   "(default: the server's, 1000)")
    p.add_argument("--json", action="store_true",
                   help="the session as JSON ({session_id, summary, turns, truncated})")
