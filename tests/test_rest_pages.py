"""One shape for every list answer (trajhub/records/pages.py), read from /openapi.json: the
records under `items`, `next_cursor` for the next page, and every older item key or offset
paging kept beside them for one version, marked deprecated."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import HTTPException

from trajhub.records.pages import Page, deprecated_alias
from trajhub.service.api.cursors import offset_cursor, page_offset

#: every list answer of the API, by component name
LISTS = {"TracePage", "TraceSpanPage", "ProjectList", "TrajectoryPage", "TrajectoryStepPage",
         "SessionPage", "DatasetList", "ItemPage", "EvaluationPage", "ResultPage", "KeyList",
         "ReviewQueueList", "ReviewItemList", "RuleList", "BackfillList", "ScoreList",
         "ScoreConfigList", "LogRecordPage", "AlertRuleList", "AlertEventList"}
#: the deprecated aliases each list still sends (old item key, offset paging)
ALIASES = {"ProjectList": {"projects"}, "KeyList": {"keys"}, "ReviewQueueList": {"queues"},
           "RuleList": {"rules"}, "BackfillList": {"backfills"}, "ScoreList": {"scores"},
           "ScoreConfigList": {"configs"}, "TrajectoryStepPage": {"steps", "next_offset"}}
#: arrays of records a list answer holds besides its items: the context of the page
CONTEXT = {("TrajectoryStepPage", "agent_steps")}


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    from trajhub.service.app import create_app
    from trajhub.service.config import Settings
    from trajhub.service.runtime import Runtime

    doc: dict[str, Any] = create_app(Runtime(Settings(), None, None)).openapi()
    return doc


def _answered(openapi: dict[str, Any]) -> set[str]:
    """The components a route answers with (2xx JSON bodies)."""
    names = set()
    for operations in openapi["paths"].values():
        for op in operations.values():
            for code, response in op["responses"].items():
                schema = (response.get("content") or {}).get("application/json", {}).get(
                    "schema", {})
                if code.startswith("2") and "$ref" in schema:
                    names.add(schema["$ref"].rsplit("/", 1)[1])
    return names


def _is_record_array(prop: dict[str, Any]) -> bool:
    items = prop.get("items") or {}
    return prop.get("type") == "array" and ("$ref" in items or items.get("type") == "object")


def test_every_list_answer_has_items_and_a_next_cursor(openapi: dict[str, Any]) -> None:
    schemas = openapi["components"]["schemas"]
    answered = _answered(openapi)
    # a list answer is named so, or pages with a cursor: the known lists are all of them
    found = {name for name in answered
             if name.endswith(("List", "Page")) or "next_cursor" in schemas[name].get(
                 "properties", {})}
    assert found == LISTS
    for name in sorted(LISTS):
        schema = schemas[name]
        properties = schema["properties"]
        assert _is_record_array(properties["items"]), name
        assert {"items", "next_cursor"} <= set(schema["required"]), name
        assert {t.get("type") for t in properties["next_cursor"]["anyOf"]} == {
            "string", "null"}, name
        others = {key for key, prop in properties.items()
                  if key != "items" and _is_record_array(prop) and not prop.get("deprecated")
                  and (name, key) not in CONTEXT}
        assert others == set(), name


def test_every_deprecated_alias_is_marked_and_says_what_replaces_it(
        openapi: dict[str, Any]) -> None:
    schemas = openapi["components"]["schemas"]
    for name in sorted(LISTS):
        properties = schemas[name]["properties"]
        deprecated = {key for key, prop in properties.items() if prop.get("deprecated")}
        assert deprecated == ALIASES.get(name, set()), name
        for key in deprecated:
            prop = properties[key]
            replaced_by = "items" if _is_record_array(prop) else "next_cursor"
            assert prop["description"].endswith(
                f"deprecated: use `{replaced_by}` (kept for one version)"), (name, key)
            if replaced_by == "items":
                assert prop["items"] == properties["items"]["items"], (name, key)
            # still sent: required, and in the example beside its replacement
            assert key in schemas[name]["required"], (name, key)
            example = schemas[name]["examples"][0]
            assert key in example and "items" in example, (name, key)
            if replaced_by == "items":
                assert example[key] == example["items"], (name, key)


def test_offset_paging_is_a_deprecated_alias_of_the_cursor(openapi: dict[str, Any]) -> None:
    paged_by_offset = []
    for path, operations in openapi["paths"].items():
        for method, op in operations.items():
            params = {p["name"]: p for p in op.get("parameters", []) if p["in"] == "query"}
            if "offset" not in params:
                continue
            paged_by_offset.append(f"{method} {path}")
            assert params["offset"].get("deprecated") is True, path
            assert "deprecated: use `cursor`" in params["offset"]["description"], path
            assert "cursor" in params and not params["cursor"].get("deprecated"), path
    assert sorted(paged_by_offset) == ["get /api/v1/trajectories/{trace_id}/events",
                                       "get /api/v1/trajectories/{trace_id}/steps"]
    events = openapi["paths"]["/api/v1/trajectories/{trace_id}/events"]["get"]
    headers = events["responses"]["200"]["headers"]
    assert headers["X-Next-Offset"]["deprecated"] is True
    assert "deprecated: use `X-Next-Cursor`" in headers["X-Next-Offset"]["description"]
    assert "deprecated" not in headers["X-Next-Cursor"]


class Thing(Page[int]):
    things: list[int] = deprecated_alias(description="in order")
    next_offset: int | None = deprecated_alias("next_cursor")


def test_a_page_answer_sends_its_items_under_the_old_key_too() -> None:
    assert Thing.item_aliases == ("things",)
    doc = Thing.answer([1, 2], "c", next_offset=2)
    assert doc == {"items": [1, 2], "next_cursor": "c", "things": [1, 2], "next_offset": 2}
    assert Thing.model_validate(doc).items == [1, 2]
    assert Page[int].answer([1]) == {"items": [1], "next_cursor": None}


def test_a_cursor_of_a_list_paged_by_position_leads_to_its_offset() -> None:
    assert page_offset(None, 7) == 7
    assert page_offset(offset_cursor(510), 0) == 510
    assert page_offset("", 3) == 3
    # both given: a request /openapi.json allows, so the cursor wins rather than a 400
    assert page_offset(offset_cursor(5), 9) == 5


@pytest.mark.parametrize(("cursor", "offset", "named"), [
    (offset_cursor(-1), 0, "'cursor'"),
    (offset_cursor(2**31), 0, "'cursor'"),
    ("bm90IG91cnM", 0, "'cursor'"),
])
def test_a_bad_cursor_is_a_400_naming_it(cursor: str, offset: int, named: str) -> None:
    with pytest.raises(HTTPException) as raised:
        page_offset(cursor, offset)
    assert raised.value.status_code == 400 and named in str(raised.value.detail)
