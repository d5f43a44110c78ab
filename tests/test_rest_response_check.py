"""`model_response`, which every route with a hand-built JSON answer sends it through: a body its
schema does not allow never leaves the server, and what leaves is exactly what was checked."""

from __future__ import annotations

import orjson
import pytest

from trajhub.service.api.answers import ResponseContractError, model_response
from trajhub.service.api.models import Dataset, DatasetList, Item

STAMPS = {"created_time": "2026-11-22T10:00:00Z", "updated_time": "2026-11-22T10:00:00Z",
          "created_at": "2026-11-22T10:00:00Z", "updated_at": "2026-11-22T10:00:00Z"}
DATASET = {"name": "weather", "description": "", "item_count": 3, **STAMPS}


def test_a_body_that_fits_its_model_is_sent_as_given() -> None:
    page = {"items": [DATASET], "next_cursor": None}
    response = model_response(DatasetList, page, 200, {"X-Test": "1"})
    assert response.status_code == 200 and response.headers["x-test"] == "1"
    assert response.media_type == "application/json"
    assert orjson.loads(response.body) == page


@pytest.mark.parametrize("broken", [
    {**DATASET, "item_count": "3"},  # a string where the schema says integer
    {k: v for k, v in DATASET.items() if k != "name"},  # a required field missing
])
def test_a_body_that_breaks_its_model_is_refused(broken: dict[str, object]) -> None:
    with pytest.raises(ResponseContractError, match="Dataset"):
        model_response(Dataset, broken)


def test_stored_json_embedded_as_a_fragment_is_checked_too() -> None:
    item = {"id": "i", "dataset": "weather", "input": None, "reference_output": None,
            "expectations": {}, "metadata": {}, "source_trace_id": None, "tags": [], **STAMPS}
    good = orjson.Fragment(b'{"id": "t", "root_step": {}, "agent_steps": []}')
    assert orjson.loads(model_response(Item, {**item, "trajectory": good}).body)[
        "trajectory"]["id"] == "t"
    with pytest.raises(ResponseContractError):
        model_response(Item, {**item, "trajectory": orjson.Fragment(b"{}")})
