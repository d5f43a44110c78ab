"""REST input: every bad parameter is a 400 naming it (never a 500), unknown query parameters
are refused, state-changing endpoints take only their declared content type, and uploads are
cut off while streaming."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.harness import ServerProcess

TRACE = "ab" * 16
SPAN = "cd" * 8

#: every GET route of /api/v1, with valid path values
GET_ROUTES = [
    "/api/v1/traces",
    f"/api/v1/traces/{TRACE}",
    f"/api/v1/traces/{TRACE}/spans/{SPAN}",
    "/api/v1/files/some-key",
    "/api/v1/projects",
    "/api/v1/trajectories",
    f"/api/v1/trajectories/{TRACE}",
    f"/api/v1/trajectories/{TRACE}/explain",
    "/api/v1/datasets",
    "/api/v1/datasets/some-set",
    "/api/v1/datasets/some-set/items",
    "/api/v1/datasets/some-set/items/0123",
    "/api/v1/datasets/some-set/export",
    "/api/v1/evaluations",
    "/api/v1/evaluations/1",
    "/api/v1/evaluations/1/results",
    "/api/v1/schema/trajectory",
]

#: list routes and the query parameters they take, by kind
TEXT_PARAMS = {
    "/api/v1/traces": ["start", "end", "service", "span_name", "attribute", "cursor"],
    "/api/v1/trajectories": ["start", "end", "agent", "tool", "model", "framework", "service",
                             "session_id", "user_id", "q", "cursor"],
    "/api/v1/evaluations": ["dataset", "cursor"],
    "/api/v1/datasets/some-set/items": ["cursor"],
    "/api/v1/evaluations/1/results": ["cursor"],
}
NUMBER_PARAMS = {
    "/api/v1/traces": ["min_duration_ms", "limit", "start", "end"],
    "/api/v1/trajectories": ["min_tokens", "max_tokens", "min_duration_ms", "max_duration_ms",
                             "limit", "start", "end"],
    "/api/v1/evaluations": ["limit"],
    "/api/v1/datasets/some-set/items": ["limit"],
    "/api/v1/evaluations/1/results": ["limit"],
}
HOSTILE_TEXT = ["a\x00b", "x" * 5000, "2024-13-45T99:99:99Z", "%00"]
HOSTILE_NUMBERS = [str(2**63), str(-(2**63) - 1), str(10**20), "-1", "inf", "-inf", "nan",
                   "1e400", "0x10", "9999-12-31T23:59:59Z"]


def _bad(r: httpx.Response, name: str) -> None:
    assert r.status_code == 400, (r.request.url, r.status_code, r.text)
    assert name in r.json()["detail"], (name, r.text)


@pytest.fixture(scope="module")
def api(server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.http, timeout=30) as c:
        yield c


def test_text_parameters_with_nul_or_too_long_are_400(api: httpx.Client) -> None:
    for route, names in TEXT_PARAMS.items():
        for name in names:
            for value in ("a\x00b", "x" * 5000):
                _bad(api.get(route, params={name: value}), name)


def test_numbers_beyond_their_column_or_not_finite_are_400(api: httpx.Client) -> None:
    for route, names in NUMBER_PARAMS.items():
        for name in names:
            for value in HOSTILE_NUMBERS:
                if name in ("start", "end") and value == "-1":
                    continue  # Unix ns before 1970: a valid time
                _bad(api.get(route, params={name: value}), name)


def test_ids_of_the_wrong_shape_are_400(api: httpx.Client) -> None:
    _bad(api.get("/api/v1/traces/xyz"), "trace_id")
    _bad(api.get(f"/api/v1/traces/{TRACE}%0A"), "trace_id")
    _bad(api.get(f"/api/v1/traces/{TRACE}/spans/{'zz' * 8}"), "span_id")
    _bad(api.get(f"/api/v1/trajectories/{'a' * 33}"), "trace_id")
    _bad(api.get(f"/api/v1/evaluations/{10**20}"), "evaluation_id")
    _bad(api.get("/api/v1/evaluations/0"), "evaluation_id")
    _bad(api.get(f"/api/v1/evaluations/{2**63}/results"), "evaluation_id")
    _bad(api.get("/api/v1/datasets/a%00b"), "name")
    _bad(api.get("/api/v1/datasets/some-set/items/a%00b"), "item_id")


def test_project_is_validated_in_the_query_and_the_header(api: httpx.Client) -> None:
    _bad(api.get("/api/v1/traces", params={"project": "a\x00b"}), "project")
    long = api.get("/api/v1/trajectories", params={"project": "p" * 4000})
    _bad(long, "project")
    assert "128" in long.json()["detail"]
    _bad(api.get("/api/v1/datasets", headers={"trajhub-project": "bad project"}),
         "trajhub-project")
    assert api.get("/api/v1/traces", params={"project": "team-a.prod:eu"}).status_code == 200


def test_unknown_query_parameters_are_400_naming_them(api: httpx.Client) -> None:
    for route in TEXT_PARAMS:
        r = api.get(route, params={"servce": "x"})
        _bad(r, "servce")
        assert "unknown query parameter" in r.json()["detail"]
    _bad(api.get(f"/api/v1/traces/{TRACE}", params={"veiw": "flat"}), "veiw")
    _bad(api.get("/api/v1/projects", params={"limit": "5"}), "limit")
    # the project scope may accompany any request
    assert api.get("/api/v1/schema/trajectory", params={"project": "p"}).status_code == 200


def test_hostile_parameter_sweep_never_500(api: httpx.Client) -> None:
    """Every GET route × hostile values in each parameter it takes (and one it does not):
    always an answer below 500."""
    params = ["project", "limit", "cursor", "start", "min_duration_ms", "min_tokens",
              "attribute", "view", "include_trajectory", "failed", "q", "nope"]
    values = ["a\x00b", "x" * 5000, str(2**63), str(10**20), "-1", "nan", "1e400", "",
              "' OR 1=1 --"]
    for route in GET_ROUTES:
        for name in params:
            for value in values:
                r = api.get(route, params={name: value})
                assert r.status_code < 500, (route, name, value, r.status_code, r.text)
    for route in ("/api/v1/traces/%00", "/api/v1/evaluations/-5", "/api/v1/files/%00",
                  "/api/v1/datasets/%00/items", f"/api/v1/evaluations/{'9' * 30}/results"):
        r = api.get(route)
        assert 400 <= r.status_code < 500, (route, r.status_code, r.text)


@pytest.mark.parametrize("content_type", [
    "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", None])
def test_state_changes_take_only_their_declared_content_type(
        api: httpx.Client, project: str, content_type: str | None) -> None:
    """Cross-site "simple requests" (no preflight) cannot change anything."""
    headers = {"content-type": content_type} if content_type else {}
    body = b'{"name": "cross-site"}'
    for path, expected in [
        ("/api/v1/datasets", "application/json"),
        ("/api/v1/trajectories/rederive", "application/json"),
        ("/api/v1/evaluations", "application/json"),
        ("/api/v1/datasets/cross-site/fill", "application/json"),
        ("/api/v1/datasets/cross-site/items", "application/json"),
        ("/api/v1/datasets/cross-site/import?create=true", "application/x-ndjson"),
        ("/api/v1/normalize", "application/json"),
    ]:
        r = api.post(path, params={"project": project}, content=body, headers=headers)
        assert r.status_code == 415, (path, r.status_code, r.text)
        assert expected in r.json()["detail"]
    r = api.patch("/api/v1/datasets/cross-site", params={"project": project}, content=body,
                  headers=headers)
    assert r.status_code == 415
    # nothing was created
    assert api.get("/api/v1/datasets/cross-site", params={"project": project}).status_code \
        == 404


def test_import_upload_is_cut_off_while_streaming(database, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A body over the limit, sent without a length, gets 413 once it passes the limit: the
    server stops reading then (the client is still sending)."""
    limited = ServerProcess.start(database.url, tmp_path,
                                  extra_env={"TRAJHUB_MAX_REQUEST_BYTES": "100000"})
    sent = 0

    def body() -> Iterator[bytes]:
        nonlocal sent
        line = b'{"input": "' + b"x" * 1000 + b'"}\n'
        for _ in range(5000):  # 5 MB, 50 times the limit
            sent += len(line)
            yield line

    try:
        with httpx.Client(base_url=limited.http, timeout=30) as c:
            try:
                r = c.post("/api/v1/datasets/big/import", params={"create": "true"},
                           content=body(), headers={"content-type": "application/x-ndjson"})
                assert r.status_code == 413, r.text
                assert "limit" in r.json()["detail"]
            except httpx.TransportError:
                pass  # the server answered 413 and closed while the client was still sending
            assert sent > 100_000
            assert c.get("/api/v1/datasets/big").status_code == 404
    finally:
        limited.stop()


def test_nul_characters_in_bodies_are_a_400_naming_where(api: httpx.Client,
                                                          project: str) -> None:
    """PostgreSQL cannot store NUL in text or JSON: a body carrying one is refused with a 400
    that names where it is and carries none of PostgreSQL's own words."""
    params = {"project": project}
    r = api.post("/api/v1/datasets", params=params, json={"name": "nul", "description": "a\x00b"})
    assert r.status_code == 400 and r.json()["detail"].startswith("body.description holds a NUL")
    assert api.post("/api/v1/datasets", params=params, json={"name": "nul"}).status_code == 201
    r = api.post("/api/v1/datasets/nul/items", params=params,
                 json={"input": {"question": "a\x00b"}})
    assert r.status_code == 400 and r.json()["detail"].startswith("body.input.question holds")
    r = api.post("/api/v1/datasets/nul/items", params=params, json={"input": {"a\x00": 1}})
    assert r.status_code == 400 and "body.input (a key) holds a NUL" in r.json()["detail"]
    line = b'{"input": "a\\u0000b", "expectations": {}}\n'
    r = api.post("/api/v1/datasets/nul/import", params=params, content=line,
                 headers={"content-type": "application/x-ndjson"})
    assert r.status_code == 400 and "NUL" in r.json()["detail"], r.text
    assert "Unicode" not in r.json()["detail"]  # PostgreSQL's words
    items = api.get("/api/v1/datasets/nul/items", params=params).json()["items"]
    assert items == []
