"""The trajectory list filters on the labels monitoring groups by (docs/monitoring.md): the run
name (its `trajhub.run` attribute), its release (the resource's `service.version`) and its
prompt version, so that a chart's point opens exactly the runs behind it."""

from __future__ import annotations

import httpx

from tests.harness import ServerProcess, final_trajectories, get_json
from tests.otlp_builders import new_span_id, new_trace_id, request, span

#: (trajhub.run, service.version, prompt version attribute)
RUNS = [("nightly", "1.4.0", "7"), ("nightly", "1.5.0", None), ("canary", None, "8")]


def test_the_list_filters_on_run_name_release_and_prompt_version(
        server: ServerProcess, project: str) -> None:
    traces = []
    with httpx.Client() as c:
        for name, release, prompt in RUNS:
            trace = new_trace_id()
            spans = [span(trace, "invoke_agent helper", span_id=new_span_id(), attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper",
                "trajhub.run": name,
                **({"gen_ai.prompt.version": prompt} if prompt else {})})]
            resource = {"service.version": release} if release else {}
            r = c.post(f"{server.http}/v1/traces",
                       content=request(spans, resource=resource).SerializeToString(),
                       headers={"content-type": "application/x-protobuf",
                                "trajhub-project": project})
            assert r.status_code == 200, r.text
            traces.append(trace.hex())
        final_trajectories(server.http, project, traces)

        def listed(**params: str) -> set[str]:
            return {i["trace_id"] for i in get_json(
                c, f"{server.http}/api/v1/trajectories", project=project, **params)["items"]}

        assert listed(run_name="nightly") == {traces[0], traces[1]}
        assert listed(release="1.5.0") == {traces[1]}
        assert listed(prompt_version="8") == {traces[2]}
        assert listed(run_name="nightly", prompt_version="7") == {traces[0]}
