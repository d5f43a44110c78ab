"""Alerts without a server (docs/alerts.md): the state a value puts a rule in, the signature a
receiver checks, the notification's body and links."""

from __future__ import annotations

import hashlib
import hmac
import uuid

import orjson
import pytest

from trajhub.service.workers.alerts import backoff_seconds, notification, signature, state_of
from trajhub.storage.alerts import DueRule


@pytest.mark.parametrize(("condition", "value", "expected"), [
    ("above", None, ("resolved", None)),
    ("above", 0.05, ("resolved", None)),
    ("above", 0.1, ("resolved", None)),  # a threshold is passed, not reached
    ("above", 0.2, ("warning", 0.1)),
    ("above", 0.6, ("firing", 0.5)),
    ("below", 0.6, ("resolved", None)),
    ("below", 0.3, ("warning", 0.5)),
    ("below", 0.05, ("firing", 0.1)),
    ("below", None, ("resolved", None)),
])
def test_a_value_puts_a_rule_in_a_state(condition: str, value: float | None,
                                        expected: tuple[str, float | None]) -> None:
    warning, alert = (0.1, 0.5) if condition == "above" else (0.5, 0.1)
    assert state_of(condition, warning, alert, value) == expected
    if expected[0] == "warning":  # no warning threshold: no warning state
        assert state_of(condition, None, alert, value) == ("resolved", None)


def test_the_signature_is_a_hex_hmac_sha256_of_the_body() -> None:
    body = b'{"state":"firing"}'
    expected = hmac.new(b"secret", body, hashlib.sha256).hexdigest()
    assert signature("secret", body) == "sha256=" + expected


def test_the_backoff_doubles_up_to_its_cap() -> None:
    assert [backoff_seconds(n) for n in (1, 2, 3, 4)] == [1, 2, 4, 8]
    assert backoff_seconds(30) == 300


def test_the_body_names_the_change_and_links_to_the_windows_runs() -> None:
    rule = DueRule(7, uuid.uuid4(), "shop", "errors", "error_rate", None, "above", 0.05, 0.1,
                   900, {"agent": "planner", "release": "v2"}, "resolved",
                   1_764_410_400_000_000_000)
    delivery = uuid.UUID(int=1)
    start = rule.now_ns - 900 * 10**9
    body = orjson.loads(notification(rule, delivery, "firing", 0.25, 0.1, start, rule.now_ns,
                                     "http://trajhub.example:4318/"))
    assert body["id"] == str(delivery) and body["type"] == "alert.firing"
    assert (body["state"], body["previous_state"], body["value"], body["threshold"]) == (
        "firing", "resolved", 0.25, 0.1)
    assert body["window"] == {"start_time": "2025-11-29T09:45:00Z",
                              "end_time": "2025-11-29T10:00:00Z", "seconds": 900}
    assert body["rule"]["filter"] == {"agent": "planner", "release": "v2"}
    assert body["links"] == {
        "ui": "http://trajhub.example:4318/#/trajectories?project=shop&empty=show"
              "&start=2025-11-29T09%3A45%3A00Z&end=2025-11-29T10%3A00%3A00Z&status=final"
              "&agent=planner&release=v2&errors=has_error",
        "api": "http://trajhub.example:4318/api/v1/trajectories?project=shop"
               "&start=2025-11-29T09%3A45%3A00Z&end=2025-11-29T10%3A00%3A00Z&status=final"
               "&agent=planner&release=v2&has_error=true",
        "rule": "http://trajhub.example:4318/api/v1/alerts/7?project=shop"}
