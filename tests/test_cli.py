"""The `trajhub` command against a real server: reading traces and trajectories as tables and
JSON, and every user mistake as one line on stderr with exit status 2.

Ground truth: tests/fixtures/README.md's `react` scenario (tools get_weather, add, divide — the
last one failing; 3 model steps, 530 + 73 tokens; graph `LangGraph`) and `model_error` (the first
model call fails, no tool runs)."""

from __future__ import annotations

import json
import socket
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.captures import replay_run
from tests.cli_runner import run_cli
from tests.harness import ServerProcess, TestDatabase, final_trajectory
from tests.otlp_builders import new_trace_id, request, span

ROOT = Path(__file__).parent.parent


@dataclass(frozen=True)
class Runs:
    project: str
    react: str
    error: str


@pytest.fixture(scope="module")
def runs(server: ServerProcess) -> Runs:
    project = "cli-" + uuid.uuid4().hex[:10]
    react = replay_run("openinference/react.prebuilt.stream", server.http, server.grpc,
                       project).most_common(1)[0][0]
    error = replay_run("cozeloop_python/model_error.prebuilt.stream", server.http, server.grpc,
                       project).most_common(1)[0][0]
    with httpx.Client() as c:
        for trace_id in (react, error):
            final_trajectory(c, server.http, project, trace_id)
    return Runs(project, react, error)


def trajhub(*argv: str, url: str | None = None, project: str | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    server = [*(["--url", url] if url else []), *(["--project", project] if project else [])]
    return run_cli(*argv, *server, env=env)


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    """The single stderr line of a failed command (exit 2, no traceback)."""
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("trajhub") and "Traceback" not in done.stderr
    return lines[0]


# --- reading -------------------------------------------------------------------------------

def test_trajectories_list_filters_and_prints_a_table(server: ServerProcess, runs: Runs
                                                      ) -> None:
    done = trajhub("trajectories", "list", "--tool", "divide", url=server.http,
                   project=runs.project)
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    assert header.split()[:2] == ["TRACE", "ID"] and "TOOLS" in header
    [row] = rows
    cells = row.split()
    assert cells[0] == runs.react and cells[1] == "final"
    assert "LangGraph" in cells
    assert "6" in cells and str(530 + 73) in cells  # steps, tokens
    assert set(cells[-1].split(",")) == {"get_weather", "add", "divide"}

    failed_model = trajhub("trajectories", "list", "--failed-model-steps", "true", "--json",
                           url=server.http, project=runs.project)
    assert failed_model.returncode == 0, failed_model.stderr
    page = json.loads(failed_model.stdout)
    assert [t["trace_id"] for t in page["items"]] == [runs.error]
    assert page["items"][0]["tool_names"] == [] and page["items"][0]["has_error"] is True

    both = json.loads(trajhub("trajectories", "list", "--agent", "LangGraph", "--json",
                              url=server.http, project=runs.project).stdout)
    assert {t["trace_id"] for t in both["items"]} == {runs.react, runs.error}

    first = trajhub("trajectories", "list", "--agent", "LangGraph", "--limit", "1",
                    url=server.http, project=runs.project)
    assert len(first.stdout.splitlines()) == 4  # header, one row, blank, where the next page is
    cursor = first.stdout.splitlines()[-1].split("--cursor ")[1]
    second = json.loads(trajhub("trajectories", "list", "--agent", "LangGraph", "--limit", "1",
                                "--cursor", cursor, "--json", url=server.http,
                                project=runs.project).stdout)
    first_id = first.stdout.splitlines()[1].split()[0]
    assert {first_id, second["items"][0]["trace_id"]} == {runs.react, runs.error}


def test_trajectories_show(server: ServerProcess, runs: Runs) -> None:
    done = trajhub("trajectories", "show", runs.react, url=server.http, project=runs.project)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"trajectory {runs.react}: final, revision 1"
    assert "530+73 tokens" in lines[1]
    steps = [line.split()[:2] for line in lines if line.startswith("    ")]
    assert [kind for kind, _ in steps] == ["model", "tool", "tool", "model", "tool", "model"], \
        done.stdout
    assert {name for kind, name in steps if kind == "tool"} == {"get_weather", "add", "divide"}
    assert [line.split()[1] for line in lines if "ERROR" in line] == ["divide"]

    document = json.loads(trajhub("trajectories", "show", runs.react, "--json",
                                  url=server.http, project=runs.project).stdout)
    assert document["id"] == runs.react and len(document["agent_steps"][0]["steps"]) == 6
    explained = json.loads(trajhub("trajectories", "show", runs.react, "--explain",
                                   url=server.http, project=runs.project).stdout)
    assert explained["trace_id"] == runs.react and explained["spans"]


def test_atif_export_then_import_into_another_project_keeps_the_run(
        server: ServerProcess, runs: Runs, tmp_path: Path) -> None:
    """The ReAct run (model, get_weather, add → divide fails, model …, 530+73 tokens) exported
    as an ATIF file and imported into a fresh project is the same run there."""
    path = tmp_path / "react.atif.json"
    done = trajhub("atif", "export", runs.react, "-o", str(path), url=server.http,
                   project=runs.project)
    assert done.returncode == 0, done.stderr
    assert json.loads(path.read_text())["schema_version"] == "ATIF-v1.8"
    target = runs.project + "-atif"
    done = trajhub("atif", "import", str(path), url=server.http, project=target)
    assert done.returncode == 0, done.stderr
    trace_id = done.stdout.split()[2]
    assert done.stdout.startswith(f"{path}: trace {trace_id} in project {target} (")
    with httpx.Client() as c:
        original = final_trajectory(c, server.http, runs.project, runs.react).json()
        imported = final_trajectory(c, server.http, target, trace_id).json()

    def steps(doc: dict[str, Any]) -> list[tuple[str, str, bool]]:
        return [(s["type"], s["name"], "error" in s["basic_info"])
                for a in doc["agent_steps"] for s in a["steps"]]

    assert steps(imported) == steps(original)
    assert [t for t, _, _ in steps(imported)] == ["model", "tool", "tool", "model", "tool",
                                                  "model"]
    metrics = imported["root_step"]["metrics_info"]
    assert (metrics["input_tokens"], metrics["output_tokens"]) == (530, 73)
    assert [name for _, name, failed in steps(imported) if failed] == ["divide"]
    # the same file again is the same trajectory, stored once
    again = trajhub("atif", "import", str(path), url=server.http, project=target)
    assert again.stdout.split()[2] == trace_id


def test_traces_list_and_show(server: ServerProcess, runs: Runs) -> None:
    listed = json.loads(trajhub("traces", "list", "--json", url=server.http,
                                project=runs.project).stdout)
    assert {runs.react, runs.error} <= {t["trace_id"] for t in listed["items"]}
    table = trajhub("traces", "list", url=server.http, project=runs.project).stdout
    assert table.splitlines()[0].split()[:4] == ["TRACE", "ID", "START", "DURATION"]
    assert runs.react in table and runs.error in table

    shown = trajhub("traces", "show", runs.react, url=server.http, project=runs.project)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == f"trace {runs.react}"
    # the tree: the tool spans sit deeper than the root
    tool_line = next(line for line in lines if line.lstrip().startswith("divide "))
    assert len(tool_line) - len(tool_line.lstrip()) > len(lines[1]) - len(lines[1].lstrip())
    assert tool_line.split()[1] in {s["span_id"] for s in json.loads(trajhub(
        "traces", "show", runs.react, "--flat", "--json", url=server.http,
        project=runs.project).stdout)["spans"] if s["name"] == "divide"}
    # the model call of `model_error` failed: its span is marked
    failed = trajhub("traces", "show", runs.error, url=server.http, project=runs.project)
    assert any("ERROR" in line for line in failed.stdout.splitlines()[1:]), failed.stdout
    flat = json.loads(trajhub("traces", "show", runs.react, "--flat", "--json",
                              url=server.http, project=runs.project).stdout)
    assert {s["name"] for s in flat["spans"]} >= {"get_weather", "add", "divide"}


# --- mistakes: one line, exit 2 --------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.integration  # starts processes
def test_an_unreachable_server() -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    for argv in (("trajectories", "list"), ("traces", "show", "0" * 32), ("projects",),
                 ("dataset", "list")):
        line = one_line_error(trajhub(*argv, url=url))
        assert line.startswith(f"trajhub: cannot reach the trajhub server at {url}"), line


def test_an_error_answer_is_shown_as_the_servers_message(server: ServerProcess, runs: Runs
                                                         ) -> None:
    bad_id = one_line_error(trajhub("trajectories", "show", "not-a-trace-id", url=server.http,
                                    project=runs.project))
    assert "not-a-trace-id" in bad_id or "trace" in bad_id
    assert bad_id.endswith("(HTTP 400)") or bad_id.endswith("(HTTP 422)"), bad_id
    missing = one_line_error(trajhub("trajectories", "show", "0" * 32, url=server.http,
                                     project=runs.project))
    assert missing == (f"trajhub: no trajectory for trace {'0' * 32} in project "
                       f"{runs.project!r} (yet) (HTTP 404)")
    # a bad parameter: the server's one-line 400 naming it, not pydantic's JSON
    too_many = one_line_error(trajhub("trajectories", "list", "--limit", "5000",
                                      url=server.http, project=runs.project))
    assert too_many.startswith("trajhub: query parameter 'limit': ") and "1000" in too_many
    assert too_many.endswith("(HTTP 400)")
    assert "{" not in too_many and "[" not in too_many


def test_an_unknown_dataset(server: ServerProcess, runs: Runs, tmp_path: Path) -> None:
    for argv in (("dataset", "show", "no-such-set"), ("dataset", "delete", "no-such-set"),
                 ("dataset", "export", "no-such-set", "-o", str(tmp_path / "out.jsonl")),
                 ("eval", "no-such-set", "-e", "expected_agents_tools")):
        line = one_line_error(trajhub(*argv, url=server.http, project=runs.project))
        assert "no dataset 'no-such-set'" in line and line.endswith("(HTTP 404)"), line
    assert not (tmp_path / "out.jsonl").exists()  # nothing written for a failed export


def test_import_without_create_says_how_to_create_the_set(
        server: ServerProcess, runs: Runs, tmp_path: Path) -> None:
    name = "imp-" + uuid.uuid4().hex[:8]
    source = tmp_path / "items.jsonl"
    source.write_text(json.dumps({"input": "2+3", "reference_output": "5",
                                  "metadata": {"origin": "hand", "reviewer": "qa"}}) + "\n")
    line = one_line_error(trajhub("dataset", "import", name, str(source), url=server.http,
                                  project=runs.project))
    assert line == f"trajhub: dataset {name!r} does not exist; pass --create to create it"
    created = trajhub("dataset", "import", name, str(source), "--create", url=server.http,
                      project=runs.project)
    assert created.returncode == 0 and "imported 1 item(s)" in created.stdout, created.stderr
    shown = trajhub("dataset", "show", name, url=server.http, project=runs.project)
    assert shown.returncode == 0 and "metadata origin,reviewer" in shown.stdout, shown.stderr


def test_a_missing_or_unwritable_file(server: ServerProcess, runs: Runs, tmp_path: Path) -> None:
    missing = tmp_path / "absent.jsonl"
    line = one_line_error(trajhub("dataset", "import", "x", str(missing), url=server.http,
                                  project=runs.project))
    assert line == f"trajhub: cannot read {missing}: No such file or directory"

    name = "exp-" + uuid.uuid4().hex[:8]
    assert trajhub("dataset", "create", name, url=server.http,
                   project=runs.project).returncode == 0
    a_file = tmp_path / "file"
    a_file.write_text("")
    for target, problem in ((a_file / "out.jsonl", f"no directory {a_file}"),
                            (tmp_path, "it is a directory")):
        line = one_line_error(trajhub("dataset", "export", name, "-o", str(target),
                                      url=server.http, project=runs.project))
        assert line == f"trajhub: cannot write {target}: {problem}"


@pytest.mark.integration  # starts processes
def test_serve_with_an_unusable_data_directory(tmp_path: Path) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("")
    line = one_line_error(trajhub("serve", "--data-dir", str(a_file / "data"),
                                  "--http-port", "0", "--grpc-port", "0"))
    assert line == f"trajhub: cannot use the data directory {a_file / 'data'}: Not a directory"


@pytest.mark.integration  # starts processes
def test_a_usage_mistake_is_one_line() -> None:
    line = one_line_error(trajhub("trajectories", "list", "--limit", "many"))
    assert "--limit" in line and "'many'" in line
    line = one_line_error(trajhub("trajectories", "list", "--has-error", "perhaps"))
    assert "--has-error" in line and "perhaps" in line
    assert "invalid choice" in one_line_error(trajhub("trajectoriez"))


# --- rederive ------------------------------------------------------------------------------

@pytest.fixture
def two_traces(server: ServerProcess, project: str) -> Iterator[list[str]]:
    ids = []
    with httpx.Client(timeout=30) as c:
        for _ in range(2):
            trace_id = new_trace_id()
            r = c.post(f"{server.http}/v1/traces",
                       content=request([span(trace_id, "job")]).SerializeToString(),
                       headers={"content-type": "application/x-protobuf",
                                "trajhub-project": project})
            assert r.status_code == 200, r.text
            ids.append(trace_id.hex())
        for trace_id in ids:
            final_trajectory(c, server.http, project, trace_id)
    yield ids


def test_rederive_says_which_database_it_used(database: TestDatabase, project: str,
                                              two_traces: list[str], tmp_path: Path) -> None:
    done = trajhub("rederive", "--database-url", database.url, "--project", project)
    assert done.returncode == 0, done.stderr
    database_name = database.url.split("?")[0].rsplit("/", 1)[1]
    assert done.stdout.startswith(f"queued 2 trace(s) for re-derivation in PostgreSQL "
                                  f"database {database_name!r} on "), done.stdout
    assert ":@" not in done.stdout and "postgresql://" not in done.stdout

    nowhere = tmp_path / "nowhere"
    line = one_line_error(trajhub("rederive", "--data-dir", str(nowhere)))
    assert line.startswith(f"trajhub: no embedded PostgreSQL in {nowhere}")
    unreachable = one_line_error(trajhub(
        "rederive", "--database-url", f"postgresql://127.0.0.1:{_free_port()}/none"))
    assert unreachable.startswith("trajhub: cannot connect to PostgreSQL database 'none' on "
                                  "127.0.0.1:")
