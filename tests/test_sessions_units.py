"""Sessions without a server: each captured conversation's turns carry the session
id the documented precedence names and read back as the user's question and the final answer;
the session records derive the API, client and CLI pieces; the ground truth is the script's;
and the address `trajhub serve` prints for the web UI."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import orjson
import pytest

from tests.capture import ground_truth
from tests.normalize_support import by_trace, load_file
from trajhub.normalizers import derive
from trajhub.normalizers.item_fields import message_text, turn_texts
from trajhub.normalizers.run_context import run_context
from trajhub.normalizers.trajectory import trajectory_to_json
from trajhub.records.sessions import SessionQuery, SessionSummary, SessionTurn
from trajhub.service.server import ui_address

SESSIONS = Path(__file__).parent / "fixtures" / "sessions"
TRUTH = json.loads((SESSIONS / "ground_truth.json").read_text())


def test_the_ground_truth_is_written_from_the_script() -> None:
    assert json.loads(json.dumps(ground_truth.conversation())) == TRUTH


def _turns(client: str) -> list[tuple[int, str | None, str | None, str | None]]:
    """(start, session id, user text, answer) of each captured trace with a session id."""
    spans = [s for body in sorted((SESSIONS / client / "conversation").glob("http_*.bin"))
             for s in load_file(body)]
    out = []
    for trace_spans in by_trace(spans).values():
        context = run_context(trace_spans)
        if context.session_id is None:
            continue  # e.g. Traceloop's one-span create_agent side trace
        derivation = derive(trace_spans)
        question, answer = turn_texts(orjson.loads(trajectory_to_json(derivation.trajectory)))
        out.append((min(s.start_ns for s in trace_spans), context.session_id, question, answer))
    return sorted(out)


@pytest.mark.parametrize("client", sorted(TRUTH["session_id_by_client"]))
def test_each_captured_turn_has_the_session_id_and_the_texts_of_the_script(client: str) -> None:
    turns = _turns(client)
    assert [t[1] for t in turns] == [TRUTH["session_id_by_client"][client]] * 2
    assert [(t[2], t[3]) for t in turns] == [(t["question"], t["answer"])
                                             for t in TRUTH["turns"]]


def test_message_text_reads_strings_parts_and_anything_else() -> None:
    assert message_text(None) is None
    assert message_text("hi") == "hi"
    assert message_text([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]) == "a\nb"
    # a part that is not text (an image) keeps the whole value, as JSON
    assert message_text([{"type": "image_url", "url": "x"}]) == '[{"type":"image_url","url":"x"}]'
    assert message_text({"city": "Paris"}) == '{"city":"Paris"}'


def test_the_session_records_derive_the_api_client_and_cli() -> None:
    from trajhub.service.api import sessions as api
    from trajhub.service.cli.reads import add_filter_flags
    from trajhub.service.client.models import SessionSummary as ClientSummary
    from trajhub.service.client.models import SessionTurn as ClientTurn

    # one class each: the API's response model and the client's model are the declaration
    assert api.SessionSummary is ClientSummary is SessionSummary
    assert api.SessionTurn is ClientTurn is SessionTurn
    assert list(SessionSummary.model_fields) == [f.name for f in SessionSummary.served()]
    assert set(SessionQuery.names()) <= set(api.SessionListQuery.model_fields)
    assert "input" in ClientTurn.model_fields
    parser = argparse.ArgumentParser()
    add_filter_flags(parser, SessionQuery)
    args = parser.parse_args(["--user-id", "u1", "--has-error", "true", "--min-turns", "2"])
    assert (args.user_id, args.has_error, args.min_turns) == ("u1", True, 2)
    assert [cli.header for _, cli in SessionSummary.cli_columns()][:2] == ["SESSION", "TURNS"]


@pytest.mark.parametrize(("host", "address"), [
    ("127.0.0.1", "http://127.0.0.1:4318/"),
    ("0.0.0.0", "http://127.0.0.1:4318/"),
    ("::", "http://[::1]:4318/"),
    ("::1", "http://[::1]:4318/"),
    ("trajhub.internal", "http://trajhub.internal:4318/"),
])
def test_the_web_ui_address_serve_prints(host: str, address: str) -> None:
    assert ui_address(host, 4318) == address


def test_the_documented_time_pattern_holds_exactly_the_dates_that_exist() -> None:
    """A time filter's pattern in /openapi.json (the sessions' `start` and `end` among them)
    promises only dates that exist, so a generated "2007-02-29" is no schema-valid request that
    the API must then refuse; February 29th of leap years stays (1680-2261, the whole range)."""
    import datetime
    import re

    from trajhub.service.api.params import TIME_PATTERN

    pattern = re.compile(TIME_PATTERN)
    for year in range(1680, 2262):
        for month, day in ((2, 28), (2, 29), (4, 30), (4, 31), (12, 31)):
            try:
                datetime.date(year, month, day)
                exists = True
            except ValueError:
                exists = False
            text = f"{year:04d}-{month:02d}-{day:02d}T12:00:00.5+01:00"
            assert bool(pattern.match(text)) is exists, text
    assert pattern.match("1700000000000000000") and not pattern.match("1679-01-01T00:00:00Z")
