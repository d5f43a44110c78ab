"""REST: datasets — CRUD, items, fill from trajectories, export and import."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal, Self
from urllib.parse import quote

from fastapi import APIRouter, HTTPException, Path, Query, Request, Response
from fastapi.responses import StreamingResponse
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from trajhub.evaluators import Expectations, ExpectationsError, expectations_from_trajectory
from trajhub.evaluators.expectations import ARGS_MATCH_MODES, EXPECTED_STEP_TYPES
from trajhub.normalizers.item_fields import check_pointer
from trajhub.records import datasets as declared_sets
from trajhub.records.documents import TrajectoryDocument
from trajhub.service.api import dataset_fill, dataset_formats
from trajhub.service.api.answers import CheckedRoute
from trajhub.service.api.cursors import decode_cursor, next_page_cursor
from trajhub.service.api.filters import TrajectoryQuery
from trajhub.service.api.found import RecordKind, deleted, found
from trajhub.service.api.models import (
    BODY_CONFIG,
    NOT_FOUND,
    Dataset,
    DatasetList,
    ErrorDetail,
    FillOutcome,
    ImportOutcome,
    Item,
    ItemPage,
)
from trajhub.service.api.params import (
    PREFIX,
    Cursor,
    JsonInt,
    PageLimit,
    TraceIdText,
    no_nul,
    storable_json,
)
from trajhub.service.api.records import answer
from trajhub.service.api.scopes import Project, Rt
from trajhub.service.errors import IngestError
from trajhub.service.ingest.bodies import read_body
from trajhub.service.runtime import Runtime
from trajhub.storage import datasets
from trajhub.storage.rows import DatasetRow

router = APIRouter(prefix=PREFIX, route_class=CheckedRoute, tags=["datasets"])

Name = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[^/\s][^/]*$"),
                 AfterValidator(no_nul)]
#: the set's name in a path
SetName = Annotated[str, Path(max_length=200), AfterValidator(no_nul)]
#: an item id in a path
ItemId = Annotated[str, Path(max_length=64), AfterValidator(no_nul)]
JSONL = "application/x-ndjson"
_EXPORT_PAGE = 200


def dataset_json(row: DatasetRow) -> dict[str, Any]:
    return answer(declared_sets.Dataset, row)


_SET = RecordKind("dataset")


async def _dataset_id(rt: Runtime, project: str, name: str) -> int:
    async with rt.db.acquire() as conn:
        dataset = await datasets.dataset_id(conn, project, name)
    return found(dataset, _SET.missing(name, project))


def stored_expectations(raw: Any) -> str:
    try:
        return storable_json(Expectations.from_dict(raw).to_dict(), "expectations")
    except ExpectationsError as exc:
        raise HTTPException(422, f"expectations.{exc}") from None


class DatasetCreate(BaseModel):
    model_config = BODY_CONFIG
    name: Name
    description: Annotated[str, Field(max_length=10_000), AfterValidator(no_nul)] = ""


class DatasetPatch(BaseModel):
    model_config = BODY_CONFIG
    name: Name | None = Field(None, description="the new name (rename)")
    description: Annotated[str, Field(max_length=10_000), AfterValidator(no_nul)] | None = None


_NAME = {"type": "string", "minLength": 1}
_NAMES = {"type": "array", "items": _NAME}
#: the shape `Expectations.from_dict` (evaluators/expectations.py) takes, as JSON Schema, so
#: /openapi.json says what an item's expectations may hold. Two rules stay in prose: a turn is
#: given on every tool step of `trajectory` or on none, and turns never go back.
EXPECTATIONS_SCHEMA: dict[str, Any] = {
    "additionalProperties": False,
    "properties": {
        "agents": _NAMES,
        "tools": {"type": "object", "propertyNames": {"minLength": 1},
                  "additionalProperties": _NAMES},
        "tool_order": _NAMES,
        "trajectory": {"type": ["array", "null"], "items": {
            "type": "object", "required": ["type", "name"], "additionalProperties": False,
            "properties": {
                "type": {"enum": list(EXPECTED_STEP_TYPES)},
                "name": _NAME,
                "args": {"description": "the arguments (JSON); absent: any match"},
                "args_match": {"anyOf": [{"enum": list(ARGS_MATCH_MODES)},
                                         {"type": "array", "minItems": 1, "items": _NAME},
                                         {"type": "null"}]},
                "turn": {"type": ["integer", "null"], "minimum": 0,
                         "description": "tool steps only; on every tool step or on none, "
                                        "never going back"}}}},
        "graph_runs": {"type": ["array", "null"],
                       "items": {"type": "array", "minItems": 1, "items": _NAME}},
    },
}
#: a JSON pointer (RFC 6901), as normalizers/item_fields.check_pointer takes it
POINTER_PATTERN = r"^(/([^~/]|~[01])*)*$"


def _pointer(value: str) -> str:
    check_pointer(value)  # its PointerError (a ValueError) says what is wrong in words
    return value


#: the pattern is declared for clients; the check's own message names the problem
Pointer = Annotated[str, Field(json_schema_extra={"pattern": POINTER_PATTERN}),
                    AfterValidator(_pointer)]


class ItemCreate(BaseModel):
    model_config = BODY_CONFIG
    input: Any = None
    reference_output: Any = None
    expectations: dict[str, Any] | None = Field(
        None, description="agents, tools (per agent), tool_order, trajectory; pre-filled from "
                          "`trajectory` when omitted", json_schema_extra=EXPECTATIONS_SCHEMA)
    trajectory: TrajectoryDocument | None = Field(None, description="a trajectory snapshot")
    source_trace_id: TraceIdText | None = None
    tags: list[str] = []
    metadata: dict[str, Any] = Field({}, description="anything else about the item: the rest "
                                     "of the run's state, where it came from, ...")


class ItemPatch(BaseModel):
    model_config = BODY_CONFIG
    input: Any = None
    reference_output: Any = None
    expectations: dict[str, Any] | None = Field(None, json_schema_extra=EXPECTATIONS_SCHEMA)
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = Field(None, description="replaces the item's metadata "
                                            "(`null`: empties it)")


class FillQuery(TrajectoryQuery):
    """The filters of `GET /api/v1/trajectories`, in a JSON body: typed strictly, like every
    body (models.BODY_CONFIG), where the query string's texts are converted."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def _exactly_one_source(schema: dict[str, Any]) -> None:
    # `trace_ids` or `query`, never both nor neither (JSON Schema: one of them is required,
    # and neither may be null)
    for name in ("trace_ids", "query"):
        prop = schema["properties"][name]
        prop["anyOf"] = [s for s in prop.get("anyOf", []) if s.get("type") != "null"]
        prop.pop("default", None)
    schema["oneOf"] = [{"required": ["trace_ids"]}, {"required": ["query"]}]


class TraceSelection(BaseModel):
    """A body that names trajectories by `trace_ids` or by a `query`, exactly one of them: a
    dataset fill, and the items added to a review queue."""

    model_config = ConfigDict(**BODY_CONFIG, json_schema_extra=_exactly_one_source)
    trace_ids: list[TraceIdText] | None = None
    query: FillQuery | None = None

    @model_validator(mode="before")
    @classmethod
    def _no_null_source(cls, data: Any) -> Any:
        # the schema gives trace_ids and query no null: leave the other one out instead
        if isinstance(data, dict):
            for name in ("trace_ids", "query"):
                if name in data and data[name] is None:
                    raise ValueError(f"{name} must not be null (leave it out)")
        return data

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.trace_ids is None) == (self.query is None):
            raise ValueError("give exactly one of trace_ids and query")
        return self


class FillRequest(TraceSelection):
    trace_ids: list[TraceIdText] | None = Field(None, description="add these trajectories")
    query: FillQuery | None = Field(
        None, description="add the trajectories matching this query: the filters of "
                          "GET /api/v1/trajectories; `status` defaults to final")
    sample_rate: float = Field(1.0, gt=0, le=1, description="fraction of the matches to add, "
                               "chosen by a hash of the trace id (stable across re-fills)")
    limit: JsonInt = Field(100, ge=1, le=100_000, description="add at most this many items")
    tags: list[str] = Field([], description="tags for the added items")
    input_pointer: Pointer | None = Field(
        None,
        description="JSON pointer (RFC 6901) into the run's input giving the item's input, "
                    "for custom graph states; default: the last user message's content")
    output_pointer: Pointer | None = Field(
        None,
        description="JSON pointer (RFC 6901) into the run's output giving the item's "
                    "reference output; default: the last assistant message's content")


@router.post("/datasets", status_code=201, summary="Create a dataset",
             response_model=Dataset,
             responses={409: {"model": ErrorDetail, "description": "the name is taken"}})
async def create_dataset(rt: Rt, project: Project, body: DatasetCreate) -> Any:
    async with rt.db.acquire() as conn:
        try:
            row = await datasets.create_dataset(conn, project, body.name, body.description)
        except datasets.DuplicateName:
            raise HTTPException(409, f"dataset {body.name!r} already exists") from None
    return dataset_json(row)


@router.get("/datasets", summary="List datasets", response_model=DatasetList)
async def list_datasets(rt: Rt, project: Project) -> Any:
    async with rt.db.acquire() as conn:
        rows = await datasets.list_datasets(conn, project)
    return DatasetList.answer([dataset_json(r) for r in rows])


@router.get("/datasets/{name}", summary="Get a dataset", response_model=Dataset,
            responses=NOT_FOUND)
async def get_dataset(rt: Rt, project: Project, name: SetName) -> Any:
    async with rt.db.acquire() as conn:
        row = await datasets.get_dataset(conn, project, name)
    return dataset_json(found(row, _SET.missing(name, project)))


@router.patch("/datasets/{name}", summary="Rename a dataset or change its description",
              response_model=Dataset,
              responses={**NOT_FOUND,
                         409: {"model": ErrorDetail, "description": "the new name is taken"}})
async def patch_dataset(rt: Rt, project: Project, name: SetName, body: DatasetPatch) -> Any:
    async with rt.db.acquire() as conn:
        try:
            updated = await datasets.update_dataset(conn, project, name, body.name,
                                                    body.description)
        except datasets.DuplicateName as exc:
            raise HTTPException(409, f"dataset {exc.args[0]!r} already exists") from None
        row = await datasets.get_dataset(conn, project, body.name or name) if updated else None
    return dataset_json(found(row, _SET.missing(name, project)))


@router.delete("/datasets/{name}", status_code=204,
               summary="Delete a dataset and its items", responses=NOT_FOUND)
async def delete_dataset(rt: Rt, project: Project, name: SetName) -> Response:
    return await deleted(rt.db, _SET.missing(name, project),
                         datasets.delete_dataset, project, name)


@router.get("/datasets/{name}/items", summary="List the items of a dataset",
            response_model=ItemPage, responses=NOT_FOUND)
async def list_items(
    rt: Rt, project: Project, name: SetName,
    include_trajectory: Annotated[bool, Query(description="embed each item's trajectory "
                                              "snapshot")] = False,
    limit: PageLimit = 100,
    cursor: Cursor = None,
) -> Any:
    dataset = await _dataset_id(rt, project, name)
    after = decode_cursor(cursor, (int,))
    async with rt.db.acquire() as conn:
        rows = await datasets.list_items(conn, dataset, after[0] if after else 0, limit,
                                         include_trajectory)
    next_cursor = next_page_cursor(rows, limit, lambda r: (r["seq"],))
    return {"items": [dataset_formats.item_json(r, name) for r in rows],
                                     "next_cursor": next_cursor}


@router.post("/datasets/{name}/items", status_code=201, summary="Add an item by hand",
             response_model=Item,
             responses={**NOT_FOUND,
                        409: {"model": ErrorDetail, "description": "the set already holds an "
                              "item from this trace"}})
async def create_item(rt: Rt, project: Project, name: SetName, body: ItemCreate) -> Any:
    dataset = await _dataset_id(rt, project, name)
    if body.expectations is not None:
        expectations = stored_expectations(body.expectations)
    elif body.trajectory is not None:
        expectations = storable_json(
            expectations_from_trajectory(body.trajectory.model_dump()).to_dict(), "trajectory")
    else:
        expectations = "{}"
    source = body.source_trace_id
    item = datasets.NewItem(
        input=_json_or_null(body.input, "input"),
        reference_output=_json_or_null(body.reference_output, "reference_output"),
        expectations=expectations,
        trajectory=_json_or_null(body.trajectory.model_dump() if body.trajectory else None,
                                 "trajectory"),
        source_trace_id=source, tags=body.tags,
        metadata=storable_json(body.metadata, "metadata"))
    async with rt.db.acquire() as conn:
        added = await datasets.insert_items(conn, dataset, [item])
        if not added:
            raise HTTPException(409, f"the set already holds an item from trace {source}")
        row = await datasets.get_item(conn, dataset, added[0])
    assert row is not None
    return dataset_formats.item_json(row, name)


def _json_or_null(value: Any, field: str) -> str | None:
    # None stays SQL NULL, as storage.datasets.json_text keeps it
    return None if value is None else storable_json(value, field)


async def _item_row(rt: Runtime, dataset: int, name: str, item_id: str) -> Any:
    async with rt.db.acquire() as conn:
        row = await datasets.get_item(conn, dataset, item_id)
    return found(row, f"no item {item_id!r} in dataset {name!r}")


@router.get("/datasets/{name}/items/{item_id}",
            summary="Get an item, with its trajectory snapshot", response_model=Item,
            responses=NOT_FOUND)
async def get_item(rt: Rt, project: Project, name: SetName, item_id: ItemId) -> Any:
    dataset = await _dataset_id(rt, project, name)
    row = await _item_row(rt, dataset, name, item_id)
    return dataset_formats.item_json(row, name)


@router.patch("/datasets/{name}/items/{item_id}",
              summary="Edit an item's expectations, tags, metadata, input or reference output",
              response_model=Item, responses=NOT_FOUND)
async def patch_item(rt: Rt, project: Project, name: SetName, item_id: ItemId, body: ItemPatch
                     ) -> Any:
    """Only the fields present in the body change; `null` clears input, reference output or
    metadata."""
    dataset = await _dataset_id(rt, project, name)
    changes: dict[str, Any] = {}
    for key in body.model_fields_set:
        value = getattr(body, key)
        if key == "expectations":
            changes[key] = stored_expectations(value if value is not None else {})
        elif key == "tags":
            changes[key] = value or []
        elif key == "metadata":
            changes[key] = storable_json(value or {}, "metadata")
        else:
            changes[key] = _json_or_null(value, key)
    async with rt.db.acquire() as conn:
        if not await datasets.update_item(conn, dataset, item_id, changes):
            raise HTTPException(404, f"no item {item_id!r} in dataset {name!r}")
    row = await _item_row(rt, dataset, name, item_id)
    return dataset_formats.item_json(row, name)


@router.delete("/datasets/{name}/items/{item_id}", status_code=204, summary="Delete an item",
               responses=NOT_FOUND)
async def delete_item(rt: Rt, project: Project, name: SetName, item_id: ItemId) -> Response:
    dataset = await _dataset_id(rt, project, name)
    return await deleted(rt.db, f"no item {item_id!r} in dataset {name!r}",
                         datasets.delete_item, dataset, item_id)


@router.post("/datasets/{name}/fill", summary="Add trajectories to the set, by id or by query",
             response_model=FillOutcome, responses=NOT_FOUND)
async def fill_dataset(rt: Rt, project: Project, name: SetName, body: FillRequest) -> Any:
    """Coze Loop's flow-back of traces into datasets. Each trajectory becomes an item
    whose input is the user's request, whose reference output is the final answer, whose
    metadata holds the rest of the run's state, and whose expectations are pre-filled from what
    it did (edit them afterwards); a trace the set
    already holds is skipped and counted in `skipped_duplicates`."""
    dataset = await _dataset_id(rt, project, name)
    trace_ids = body.trace_ids
    f = dataset_fill.to_filter(body.query, body.limit) if body.query is not None else None
    async with rt.db.acquire() as conn:
        outcome = await dataset_fill.fill(
            conn, project, dataset, trace_ids=trace_ids, f=f, sample_rate=body.sample_rate,
            limit=body.limit, tags=body.tags, input_pointer=body.input_pointer,
            output_pointer=body.output_pointer)
    return outcome.to_dict()


@router.get(
    "/datasets/{name}/export",
    summary="Export the set as JSONL, CSV, agentevals messages or ATIF trajectories",
    response_class=StreamingResponse,
    responses={**NOT_FOUND, 200: {"content": {
        "application/x-ndjson": {"schema": {"type": "string", "description": "one item per "
                                            "line (jsonl: an item; agentevals: its messages; "
                                            "atif: its ATIF trajectory)"}},
        "text/csv": {"schema": {"type": "string", "description": "a header, then one row per "
                                "item"}}},
        "description": "the items, streamed; `X-Item-Count` gives their number"}})
async def export_dataset(
    rt: Rt, project: Project, name: SetName,
    format: Annotated[Literal["jsonl", "csv", "agentevals", "atif"], Query(
        description="jsonl: trajhub's own format (re-importable); csv; agentevals: "
                    "OpenAI-style message lists with tool calls; atif: one ATIF-v1.8 "
                    "trajectory per item (docs/atif.md)")] = "jsonl",
) -> StreamingResponse:
    dataset = await _dataset_id(rt, project, name)
    async with rt.db.acquire() as conn:
        row = await datasets.get_dataset(conn, project, name)
    count = row["item_count"] if row is not None else 0
    line = {"jsonl": dataset_formats.jsonl_line, "csv": dataset_formats.csv_line,
            "agentevals": dataset_formats.agentevals_line,
            "atif": dataset_formats.atif_line}[format]

    async def stream() -> AsyncIterator[bytes]:
        if format == "csv":
            yield dataset_formats.csv_header()
        after = 0
        while True:
            # one short connection per page: a slow reader never pins a pooled connection
            async with rt.db.acquire() as conn:
                rows = await datasets.list_items(conn, dataset, after, _EXPORT_PAGE, True)
            if not rows:
                return
            yield b"".join(line(r) for r in rows)
            after = rows[-1]["seq"]

    extension = "csv" if format == "csv" else "jsonl"
    return StreamingResponse(stream(), media_type=dataset_formats.MEDIA_TYPES[format], headers={
        "X-Item-Count": str(count),
        "Content-Disposition": attachment(f"{name}.{format}.{extension}")})


_UNSAFE_IN_QUOTES = re.compile(r'[^\x20-\x7e]|["\\%]')


def attachment(filename: str) -> str:
    """A Content-Disposition naming `filename` (RFC 6266): an ASCII fallback in `filename`,
    the exact name percent-encoded as UTF-8 in `filename*` (RFC 5987). A set's name may hold
    any character but `/`: sent raw, a non-Latin-1 name cannot be encoded into the header, and a
    line break would end it and start another (header injection)."""
    fallback = _UNSAFE_IN_QUOTES.sub("_", filename)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(filename, safe='')}"


@router.post(
    "/datasets/{name}/import", summary="Import items from trajhub JSONL",
    response_model=ImportOutcome,
    responses={**NOT_FOUND, 413: {"model": ErrorDetail, "description": "body over the size limit"},
               415: {"model": ErrorDetail, "description": "not application/x-ndjson"},
               422: {"model": ErrorDetail, "description": "a bad line (named)"}},
    openapi_extra={"requestBody": {"required": True, "content": {
        JSONL: {"schema": {"type": "string", "description":
                                 "one item per line, as `export?format=jsonl` writes them"}}}}})
async def import_dataset(
    request: Request, rt: Rt, project: Project, name: SetName,
    create: Annotated[bool, Query(description="create the set if it does not exist")] = False,
) -> Any:
    """All or nothing: a bad line rejects the import with a 422 naming the line and field.
    Items whose source trace the set already holds are skipped (`skipped_duplicates`). The body
    is cut off with a 413 as soon as it passes the size limit."""
    try:
        body = await read_body(request, rt.settings.max_request_bytes)
    except IngestError as error:
        raise HTTPException(error.http_status, error.message) from None
    try:
        items = [dataset_formats.parse_import_line(line, n)
                 for n, line in enumerate(body.splitlines(), 1) if line.strip()]
    except dataset_formats.ItemImportError as exc:
        raise HTTPException(422, str(exc)) from None
    async with rt.db.acquire() as conn, conn.transaction():
        dataset = await datasets.dataset_id(conn, project, name)
        if dataset is None and create:
            dataset = (await datasets.create_dataset(conn, project, name, "")).id
        if dataset is None:
            raise HTTPException(404, _SET.missing(name, project))
        added = await datasets.insert_items(conn, dataset, items)
    return {"added": len(added),
                                          "skipped_duplicates": len(items) - len(added)}

