"""How much checking a REST answer against its schema costs: one page of 1,000
trajectory summaries and one of 1,000 dataset items, encoded the ways a route could send them.

    .venv/bin/python bench/response_speed.py

Prints milliseconds per answer (median of a few rounds); it asserts nothing. The routes use
`model_response` (a compiled JSON Schema check, then orjson)."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import orjson
from fastapi.encoders import jsonable_encoder
from pydantic import BaseModel

from trajhub.service.api.answers import model_response
from trajhub.service.api.models import _SUMMARY_EXAMPLE, ITEM_EXAMPLE, ItemPage, TrajectoryPage


def timed(fn: Callable[[], Any], rounds: int = 7, per_round: int = 5) -> float:
    fn()
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(per_round):
            fn()
        samples.append((time.perf_counter() - start) / per_round * 1000)
    return statistics.median(samples)


def main() -> None:
    pages: list[tuple[str, type[BaseModel], dict[str, Any]]] = [
        ("TrajectoryPage, 1,000 summaries", TrajectoryPage, {
            "items": [dict(_SUMMARY_EXAMPLE, trace_id=f"{i:032x}") for i in range(1000)],
            "next_cursor": None}),
        ("ItemPage, 1,000 items", ItemPage, {
            "items": [dict(ITEM_EXAMPLE, id=f"{i:032x}") for i in range(1000)],
            "next_cursor": "abc"}),
    ]
    for title, model, doc in pages:
        print(title)
        report(model, doc)


def report(model: type[BaseModel], doc: dict[str, Any]) -> None:
    ways: list[tuple[str, Callable[[], Any]]] = [
        ("orjson alone, unchecked (json_response, before)", lambda: orjson.dumps(doc)),
        ("model_response: JSON Schema check + orjson (now)",
         lambda: model_response(model, doc)),
        ("pydantic model_validate + model_dump_json",
         lambda: model.model_validate(doc).model_dump_json(exclude_unset=True)),
        ("pydantic model_validate + orjson(model_dump(mode=json))",
         lambda: orjson.dumps(model.model_validate(doc).model_dump(mode="json"))),
        ("FastAPI's response_model path (validate, jsonable_encoder, json)",
         lambda: json.dumps(jsonable_encoder(model.model_validate(doc))).encode()),
    ]
    for label, fn in ways:
        print(f"  {label:66s} {timed(fn):8.2f} ms")


if __name__ == "__main__":
    main()
