"""The server against its own /openapi.json, as a new user's first check of an API would try it:
`schemathesis run …/openapi.json --checks all` on a server with API keys on, sent with an
admin key. Every phase schemathesis has (examples, coverage, fuzzing, stateful) and every
check must pass; where a check cannot apply, CONFIG switches it off with the reason. Bounded
to about two minutes (MAX_EXAMPLES per operation); in CI (env CI) the run is derandomized with
a fixed seed, so a red run is reproducible with the command it prints.

It runs the `schemathesis` command rather than its pytest plugin: the plugin's lazy loader
(`schemathesis.pytest.from_fixture`) sets a node attribute pytest 9 no longer has."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest

from tests.conftest import Secured

#: generated cases per operation and phase: all operations together well within two minutes, as
#: the whole suite must stay within 5 minutes (bench/README.md, "The test suite")
MAX_EXAMPLES = int(os.environ.get("TRAJHUB_SCHEMATHESIS_EXAMPLES", "8"))
#: CI's seed (any fixed number: it makes the generated cases the same on every run)
CI_SEED = 18

#: the routes that page with `cursor`
PAGED = ["/api/v1/datasets/{name}/items", "/api/v1/evaluations", "/api/v1/traces",
         "/api/v1/trajectories", "/api/v1/evaluations/{evaluation_id}/results",
         "/api/v1/traces/{trace_id}/spans", "/api/v1/sessions",
         "/api/v1/trajectories/{trace_id}/steps", "/api/v1/trajectories/{trace_id}/events",
         "/api/v1/logs", "/api/v1/alerts", "/api/v1/alerts/{alert_id}/events"]
#: the OTLP/HTTP and Coze Loop ingest routes
INGEST = ["/v1/traces", "/v1/logs", "/v1/metrics", "/v1/loop/opentelemetry/v1/traces",
          "/v1/loop/traces/ingest", "/v1/loop/files/upload"]


def config_toml(project: str, admin: str, ci: bool) -> str:
    """schemathesis.toml for the run, in `project` with its admin key `admin`; each
    switched-off check says why."""
    lines = [
        f'headers = {{ Authorization = "Bearer {admin}" }}',
        "continue-on-failure = true",
        "request-timeout = 30",
        *([f"seed = {CI_SEED}"] if ci else []),
        "",
        "[generation]",
        'mode = "all"',
        # PostgreSQL text and jsonb cannot hold NUL: the server refuses one anywhere in a body
        # with a 400 naming it (test_rest_input.py), which JSON Schema cannot say of free-form
        # values
        "allow-x00 = false",
        f"max-examples = {MAX_EXAMPLES}",
        f"deterministic = {'true' if ci else 'false'}",
        "",
        # the key's project: naming any other one is a (documented) 403, which would stop
        # every generated request before the route's own checks
        "[parameters]",
        f'"query.project" = "{project}"',
        "",
        "[[operations]]",
        f"include-path = {INGEST!r}".replace("'", '"'),
        # their bodies are binary protobuf, multipart, or OTLP/JSON that no JSON Schema here
        # describes span by span: a generated body that fits "binary" or "object" is mostly
        # not an OTLP message (a 400 naming why), and one that breaks it is no message either
        "checks.positive_data_acceptance.enabled = false",
        "checks.negative_data_rejection.enabled = false",
        "",
        "[[operations]]",
        'include-path = "/api/v1/datasets/{name}/import"',
        # its body is JSONL text (a string in the document): a generated string is rarely
        # lines of items, and the route rightly answers 422 naming the bad line; and on the
        # wire every body is text, so a "non-string" body is JSONL text all the same
        "checks.positive_data_acceptance.enabled = false",
        "checks.negative_data_rejection.enabled = false",
        "",
        "[[operations]]",
        f"include-path = {PAGED!r}".replace("'", '"'),
        'include-method = "GET"',
        # a made-up `cursor` is rightly a 400 (only one the API issued is valid; the live
        # route test pages with real ones). The fuzzing phase sends cursors of the route's
        # shape (schemathesis_hooks.map_query); the coverage phase applies no hooks and would
        # send boundary strings as cursors, so it is off for the paged routes
        "phases.coverage.enabled = false",
        "",
        "[[operations]]",
        'include-path-regex = "^/api/v1/datasets/[^/]+/items(/[^/]+)?$"',
        # an item's expectations follow rules across steps that JSON Schema cannot state (a
        # tool step's `turn` on every tool step or on none, never going back:
        # evaluators/expectations.py); a generated trajectory breaking them is a 422 naming it
        "checks.positive_data_acceptance.enabled = false",
        "",
        "[[operations]]",
        'include-path = "/api/v1/score-configs/{name}"',
        'include-method = "PUT"',
        # a range's min must not be above its max: a rule across two fields that JSON Schema
        # cannot state (the route answers 400 naming both)
        "checks.positive_data_acceptance.enabled = false",
        "",
        "[[operations]]",
        'include-path = "/api/v1/evaluations"',
        'include-method = "POST"',
        # each evaluator checks its own options (evaluators/, README's "Datasets and
        # runs"); the document gives them in prose, so generated options are mostly a 400
        # naming one
        "checks.positive_data_acceptance.enabled = false",
        "",
        "[[operations]]",
        'include-path = "/api/v1/timeseries"',
        # `end` must be later than `start` and the range at most 10,000 buckets: rules across
        # fields that JSON Schema cannot state (the route answers 400 naming which)
        "checks.positive_data_acceptance.enabled = false",
        "",
        "[[operations]]",
        'include-path-regex = "^/api/v1/rules(/[^/]+)?$"',
        'include-method-regex = "^(POST|PATCH)$"',
        # a rule's evaluator checks its options as an evaluation's does (above), and its
        # filter takes the list's parameters with their own checks (docs/rules.md §1)
        "checks.positive_data_acceptance.enabled = false",
    ]
    return "\n".join(lines) + "\n"


@pytest.mark.slow  # a fuzzer over every operation
def test_schemathesis_finds_no_failure_with_every_check(secured: Secured,
                                                        tmp_path: Path) -> None:
    ci = bool(os.environ.get("CI"))
    # a project and an admin key of its own: what it creates (evaluations that score runs,
    # rules, queues) stays out of the other tests' project, and its stateful phase may list the
    # keys and revoke one it found, its own included, while the other tests on this server go
    # on using `secured.admin`
    project = "fuzz-" + uuid.uuid4().hex[:10]
    made = httpx.post(f"{secured.server.http}/api/v1/keys", params={"project": project},
                      headers={"authorization": f"Bearer {secured.bootstrap}"},
                      json={"scope": "admin", "name": "schemathesis"}, timeout=60)
    assert made.status_code == 201, made.text
    config = tmp_path / "schemathesis.toml"
    config.write_text(config_toml(project, made.json()["key"], ci))
    # the server's document, read here and handed over as a file: schemathesis gives up on a
    # schema URL after 10 seconds, which the server's first build of the document can take on
    # a loaded machine
    document = httpx.get(f"{secured.server.http}/openapi.json", timeout=120)
    assert document.status_code == 200, document.text
    (tmp_path / "openapi.json").write_bytes(document.content)
    command = [str(Path(sys.executable).parent / "schemathesis"), "--config-file", str(config),
               # every check is on unless CONFIG turns it off (`--checks all` would override
               # the per-operation switches)
               "run", str(tmp_path / "openapi.json"), "--url", secured.server.http,
               "--workers", "1", "--report", "junit",
               "--report-dir", str(tmp_path / "report")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900,
                          # its cache (.schemathesis/) goes to the test's folder
                          cwd=tmp_path,
                          env={**os.environ, "SCHEMATHESIS_HOOKS": "tests.schemathesis_hooks",
                               "PYTHONPATH": str(Path(__file__).parent.parent)})
    summary = done.stdout[-4000:]
    (tmp_path / "schemathesis.out").write_text(done.stdout + done.stderr)
    print(done.stdout[-20000:])
    assert done.returncode == 0, f"schemathesis found failures:\n{summary}\n{done.stderr[-2000:]}"


def test_every_paged_route_has_a_cursor_of_its_shape_for_the_fuzzer() -> None:
    """A route that pages with `cursor` gets, in the fuzzing phase, a cursor of the shape it
    issues (tests/schemathesis_hooks.py); one left out fails that phase with a made-up one."""
    from tests.schemathesis_hooks import _CURSORS

    assert set(_CURSORS) == set(PAGED)
