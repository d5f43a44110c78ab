"""The web UI's monitoring page (docs/monitoring.md): its charts show, bucket by bucket, the runs,
error rate, latency, tokens, cost by model and a score's mean of runs whose figures the test
chose; grouping splits them by model; and a point opens the trajectory list of its bucket and
group.

Data: four GenAI runs over two hours, each a 100-in / 10-out model call: in the earlier hour one
gpt-4o run of 8 s; in the later hour gpt-4o runs of 1 s and 4 s (the second failed) and a 2 s
gpt-4o-mini run. Two of the later hour's runs are scored `correctness` 1.0 and 0.5."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

import httpx
import pytest
from genai_prices import Usage, calc_price

from tests.harness import ServerProcess, final_trajectories
from tests.otlp_builders import monitored_run_spans, new_trace_id, post_spans
from tests.ui_support import artifacts_dir, browser_page, require_browser

HOUR = 3_600_000_000_000
#: (minutes into the hour, which hour (0 the earlier), model, seconds, failed, correctness)
RUNS = [(5, 0, "gpt-4o", 8, False, None),
        (5, 1, "gpt-4o", 1, False, 1.0),
        (20, 1, "gpt-4o", 4, True, 0.5),
        (40, 1, "gpt-4o-mini", 2, False, None)]


@pytest.fixture(autouse=True)
def _browser() -> None:
    require_browser()


def _usd(model: str, runs: int) -> float:
    return runs * float(calc_price(Usage(input_tokens=100, output_tokens=10),
                                   model_ref=model).total_price)


def _iso(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _ingest(server: ServerProcess, project: str) -> int:
    """Send RUNS in the hour before this one and this one; the earlier hour's start (ns)."""
    now = time.time_ns()
    earlier = now - now % HOUR - HOUR
    traces = []
    with httpx.Client(base_url=f"{server.http}/api/v1",
                      headers={"trajhub-project": project}) as api:
        for minute, hour, model, seconds, failed, _ in RUNS:
            trace = new_trace_id()
            post_spans(server.http, project, monitored_run_spans(
                trace, earlier + hour * HOUR + minute * 60_000_000_000, "assistant", model,
                seconds * 1000, error=failed))
            traces.append(trace.hex())
        final_trajectories(server.http, project, traces)
        for trace, run in zip(traces, RUNS, strict=True):
            if run[5] is not None:
                r = api.post(f"/trajectories/{trace}/scores",
                             json={"scores": [{"name": "correctness", "value": run[5]}]})
                assert r.status_code == 201, r.text
    return earlier


def _table(page: object, chart: str) -> object:
    """The chart's data table, shown."""
    details = page.locator(f"#{chart} .chart-data")  # type: ignore[attr-defined]
    details.evaluate("d => { d.open = true; }")
    return details.locator("table")


def _headers(page: object, chart: str) -> list[str]:
    return _table(page, chart).locator("thead th").all_inner_texts()  # type: ignore[attr-defined]


def _data(page: object, chart: str) -> list[list[str]]:
    """The chart's data table: per bucket, its cells' texts (the bucket first)."""
    rows = _table(page, chart).locator("tbody tr")  # type: ignore[attr-defined]
    return [[c.strip() for c in rows.nth(i).locator("th, td").all_inner_texts()]
            for i in range(rows.count())]


def _seconds(text: str) -> float:
    value = re.fullmatch(r"([\d.]+) (ms|s)", text)
    assert value, text
    return float(value.group(1)) / (1000 if value.group(2) == "ms" else 1)


def _click_point(page: object, chart: str, index: int, line: int) -> None:
    """Click where the chart draws its line `line`'s point `index`."""
    x, y = page.evaluate(  # type: ignore[attr-defined]
        """([id, i, n]) => {
            const u = document.getElementById(id).chart;
            u.over.scrollIntoView({block: "center"});
            const box = u.over.getBoundingClientRect();
            // a point on the plot's edge is drawn half outside it: aim inside
            const inside = (v, size) => Math.min(Math.max(v, 2), size - 2);
            return [box.left + inside(u.valToPos(u.data[0][i], "x"), box.width),
                    box.top + inside(u.valToPos(u.data[n + 1][i], "y"), box.height)];
        }""", [chart, index, line])
    page.mouse.move(x, y)  # type: ignore[attr-defined]
    page.mouse.click(x, y)  # type: ignore[attr-defined]


def test_the_charts_show_the_runs_figures_and_a_point_opens_its_runs(
        server: ServerProcess, project: str) -> None:
    from playwright.sync_api import expect

    earlier = _ingest(server, project)
    later = earlier + HOUR
    address = (f"#/monitoring?project={project}&start={_iso(earlier)}"
               f"&end={_iso(later + HOUR)}&bucket=hour")
    with browser_page(server.http, artifacts_dir("monitoring")) as ui:
        page = ui.page
        ui.open(address)
        expect(page.locator("#chart-score canvas")).to_have_count(1)
        ui.shot("01-charts")
        buckets = [_iso(earlier), _iso(later)]
        assert _data(page, "chart-runs") == [[buckets[0], "1"], [buckets[1], "3"]]
        assert _data(page, "chart-errors") == [[buckets[0], "0.0%"], [buckets[1], "33.3%"]]
        latency = _data(page, "chart-latency")
        # p50 and p95 within 5 %: the earlier hour's one 8 s run; the later hour's 1, 2 and 4 s
        for (_, p50, p95), (want50, want95) in zip(latency, [(8, 8), (2, 4)], strict=True):
            assert abs(_seconds(p50) - want50) <= 0.05 * want50
            assert abs(_seconds(p95) - want95) <= 0.05 * want95
        assert _data(page, "chart-tokens") == [[buckets[0], "100", "10"],
                                               [buckets[1], "300", "30"]]
        assert _headers(page, "chart-cost") == ["Bucket", "gpt-4o", "gpt-4o-mini"]
        rows = _data(page, "chart-cost")
        for (_, text), want in zip([(r[0], r[1]) for r in rows],
                                   [_usd("gpt-4o", 1), _usd("gpt-4o", 2)], strict=True):
            assert float(text.lstrip("$")) == pytest.approx(want, rel=1e-3)
        assert rows[1][2].lstrip("$") and float(rows[1][2].lstrip("$")) == pytest.approx(
            _usd("gpt-4o-mini", 1), rel=1e-3)
        assert _data(page, "chart-score") == [[buckets[0], "—"], [buckets[1], "0.750"]]

        # a point opens its bucket's runs: the later hour's three
        _click_point(page, "chart-runs", 1, 0)
        expect(page).to_have_url(re.compile(r"#/trajectories\?"))
        expect(page.locator("table tbody tr[data-trace-id]")).to_have_count(3)
        ui.shot("02-runs-of-a-point")

        ui.open(address + "&group_by=model")
        expect(page.locator("#chart-runs canvas")).to_have_count(1)
        assert _headers(page, "chart-runs") == ["Bucket", "gpt-4o", "gpt-4o-mini"]
        assert _data(page, "chart-runs") == [[buckets[0], "1", "0"], [buckets[1], "2", "1"]]
        ui.shot("03-by-model")
        # the later hour's gpt-4o-mini point: one run
        _click_point(page, "chart-runs", 1, 1)
        expect(page.locator("table tbody tr[data-trace-id]")).to_have_count(1)
        expect(page.locator("#f-model")).to_have_value("gpt-4o-mini")
        ui.assert_clean()
