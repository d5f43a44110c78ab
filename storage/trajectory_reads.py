"""Reads of derived trajectories for the REST API."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple, TypeGuard, TypeVar

from trajhub.records import Query
from trajhub.records.scores import ScoreCondition, score_sort_name
from trajhub.records.trajectories import TRAJECTORY_SORTS, TrajectoryQuery
from trajhub.storage.database import Connection
from trajhub.storage.rows import (
    ExplanationRow,
    Row,
    TrajectoryDocumentRow,
    TrajectoryExportRow,
    TrajectoryRow,
    TrajectorySummaryRow,
)
from trajhub.storage.sql import Params, in_trace_partition
from trajhub.storage.stored_documents import HAS_DOCUMENT

StoredRow = TypeVar("StoredRow", bound=Row)

#: sort name → SQL expression; each is paired with trace_id for a total order
SORTS = TRAJECTORY_SORTS


@dataclass(frozen=True)
class TrajectoryFilter:
    """A trajectory list query: `values` holds the filters of trajhub.records.trajectories'
    TrajectoryQuery that were given, by name (times already in Unix ns)."""

    values: Mapping[str, Any] = field(default_factory=dict)
    trace_ids: Sequence[str] | None = None
    sort: str = "start_time"
    descending: bool = True
    cursor: tuple[Any, str] | None = None
    limit: int = 50

    def __post_init__(self) -> None:
        unknown = set(self.values) - set(TrajectoryQuery.names())
        if unknown:
            raise ValueError(f"unknown trajectory filters: {sorted(unknown)}")


def _status(value: Any, arg: Params) -> list[str]:
    conditions = [f"status = {arg(value)}"]
    if value == "open":
        # the few open ones are listed in open_trajectories (migration 0016): start there
        # rather than walk the project's trajectories for them
        conditions.append("trace_id IN (SELECT o.trace_id FROM open_trajectories o "
                          "WHERE o.project = $1)")
    return conditions


def _text(value: Any, arg: Params) -> list[str]:
    if not value:
        return []
    # The text, ignoring case: root_input and root_output are stored lower-cased
    # (storage/derivation_store.py, migration 0018), so this is exactly `ILIKE '%text%'`
    # (which compares lower(run) with lower(pattern)) without lower-casing each run read.
    # strpos rather than LIKE: no escaping of % and _, and a faster search. Text with a word
    # also reads the words (`_with_words`); text without one (punctuation only) is a scan.
    needle = f"lower({arg(value)})"
    return [f"(strpos(root_input, {needle}) > 0 OR strpos(root_output, {needle}) > 0)"]


def _has_words(text: Any) -> TypeGuard[str]:
    return isinstance(text, str) and any(c.isalnum() for c in text)


def _with_words(text: str, arg: Params) -> tuple[str, str]:
    """What free text with a word reads instead of `trajectories`: the runs that have a word
    starting with each word of `text` (split as the lower-cased stored text was), in two
    relations whose keys a list unites (`Selection.sql`), each read by the list's own
    conditions (unqualified names stay the run's: the joined tables' keys are renamed).

    - The runs whose words are filled (migration 0068) and not queued again: found in the words
      index, or, when most runs have every word, by walking the runs newest first and reading
      each one's words by its key. `first_seen` is joined as a range pair, not an equality:
      PostgreSQL multiplied an equality's selectivity with trace_id's, expected one run for
      any text, and then hashed whole tables.
    - The runs queued for their words (stored since the derivation worker last had no backlog,
      or stored again): usually few, their text split here as the index would split it
      (`trajhub_queued_words_match`, migration 0068, which lets PostgreSQL walk them in the
      list's order when many are queued).

    The same answers whether a run's words are filled or not. Two relations, not one with the
    queued runs' words missing: a search found those through an index of the runs without
    words, which kept an entry for every run filled since the last vacuum, and after a long
    burst every search read them all (bench/README.md, "Free text"); and not one UNION ALL
    below the list's ORDER BY, which PostgreSQL then sorted whole instead of walking."""
    query = f"trajhub_prefix_query(lower({arg(text)}))"
    filled = (
        "trajectories JOIN (SELECT project AS words_project, trace_id AS words_trace_id, "
        "first_seen AS words_first_seen, words FROM trajectory_words) w "
        "ON w.words_project = trajectories.project AND w.words_trace_id = trajectories.trace_id "
        "AND w.words_first_seen >= trajectories.first_seen "
        "AND w.words_first_seen <= trajectories.first_seen "
        f"AND w.words @@ {query} AND NOT EXISTS (SELECT 1 FROM trajectory_words_queue q "
        "WHERE q.project = trajectories.project AND q.trace_id = trajectories.trace_id)")
    queued = (
        "trajectories JOIN (SELECT project AS queued_project, trace_id AS queued_trace_id, "
        "first_seen AS queued_first_seen FROM trajectory_words_queue) q "
        "ON q.queued_project = trajectories.project AND q.queued_trace_id = trajectories.trace_id "
        "AND q.queued_first_seen >= trajectories.first_seen "
        "AND q.queued_first_seen <= trajectories.first_seen "
        "AND trajhub_queued_words_match(trajectories.root_input, trajectories.root_output, "
        f"{query})")
    return filled, queued


# A trajectory's score of a name, for the `score` filter and the `score:<name>` sort: its
# latest whole-run score of that name (a newer revision's, or a corrected one, replaces the
# older ones; those stay listed on the trajectory with their revision).
def _latest_scores(name: str) -> str:
    return ("(SELECT DISTINCT ON (s.trace_id) s.trace_id, s.value_type, s.number_value, "
            "s.category_value FROM scores s "
            f"WHERE s.project = $1 AND s.name = {name} AND s.step_id IS NULL "
            "ORDER BY s.trace_id, s.id DESC)")


def _score(value: Any, arg: Params) -> list[str]:
    return [score_condition(value, arg)]


def score_condition(value: Any, arg: Params, trace_id: str = "trace_id") -> str:
    """The trajectory whose trace id is `trace_id` has a latest whole-run score that
    satisfies `value` (a ScoreCondition): the list's `score` filter, and a session's."""
    assert isinstance(value, ScoreCondition)
    if value.op in (">=", "<="):
        test = f"l.value_type = 'number' AND l.number_value {value.op} {arg(value.number)}"
    else:
        # a category as written; and a number or boolean when the text reads as one
        same = [f"l.value_type = 'category' AND l.category_value = {arg(value.text)}"]
        if value.number is not None:
            same.append(f"l.value_type = 'number' AND l.number_value = {arg(value.number)}")
        if value.boolean is not None:
            same.append(f"l.value_type = 'boolean' AND l.number_value = "
                        f"{arg(1.0 if value.boolean else 0.0)}")
        test = " OR ".join(f"({c})" for c in same)
        if value.op == "!=":
            test = f"l.value_type IS NOT NULL AND NOT ({test})"
    return (f"{trace_id} IN (SELECT l.trace_id FROM {_latest_scores(arg(value.name))} l "
            f"WHERE {test})")


def _score_sort(name: str, arg: Params) -> tuple[str, str]:
    """The sort expression of `score:<name>`, and the condition keeping the trajectories that
    have such a score (a NULL sort value would fall out of the keyset cursor's comparison)."""
    placeholder = arg(name)
    value = ("(SELECT s.number_value FROM scores s WHERE s.project = trajectories.project "
             f"AND s.trace_id = trajectories.trace_id AND s.name = {placeholder} "
             "AND s.step_id IS NULL ORDER BY s.id DESC LIMIT 1)")
    # the trajectories with any such score first (the index of migration 0035), then those
    # whose latest one has a number or boolean value
    having = (f"trace_id IN (SELECT s.trace_id FROM scores s WHERE s.project = $1 "
              f"AND s.name = {placeholder} AND s.step_id IS NULL) AND {value} IS NOT NULL")
    return value, having


#: the filters whose condition is not a template (`Condition.custom`), by name
_CUSTOM: dict[str, Callable[[Any, Params], list[str]]] = {"status": _status, "q": _text,
                                                          "score": _score}
_missing = {p.name for p in TrajectoryQuery.params() if p.custom} - set(_CUSTOM)
assert not _missing, f"custom trajectory filters without a condition: {_missing}"


def conditions(filter_: type[Query], values: Mapping[str, Any], arg: Params,
               custom: Mapping[str, Callable[[Any, Params], list[str]]]) -> list[str]:
    """The SQL conditions of the given filters, in declaration order: each parameter's
    template with its value as a query argument (a bool's condition or its negation)."""
    where: list[str] = []
    for p in filter_.params():
        if p.name not in values or values[p.name] is None:
            continue
        value = values[p.name]
        if p.custom:
            where.extend(custom[p.name](value, arg))
        elif p.type is bool:
            where.append(p.condition if value else p.negated)
        else:
            where.append(p.condition.format(arg(value)))
    return where


class Selection(NamedTuple):
    """What a trajectory filter selects: the relations to read (`trajectories`, or, for free
    text with a word, the runs with their words and the runs queued for them), the conditions
    over each (unqualified columns, `$1` the project; a caller may add its own), their
    arguments, and the sort expression."""

    relations: tuple[str, ...]
    where: list[str]
    arg: Params
    sort: str

    def sql(self, order: str = "", limit: str = "") -> str:
        """`FROM … WHERE …` for a SELECT of `trajectories`' columns. With two relations, the
        runs whose keys either selects, each read in the caller's `order` up to its `limit` (which
        the caller applies again): a page of the list costs each relation its page."""
        conditions = " AND ".join(self.where)
        if len(self.relations) == 1:
            return f"FROM {self.relations[0]} WHERE {conditions}"
        tail = (f" ORDER BY {order}" if order else "") + (f" LIMIT {limit}" if limit else "")
        keys = " UNION ALL ".join(
            "(SELECT trajectories.project, trajectories.trace_id, trajectories.first_seen "
            f"FROM {relation} WHERE {conditions}{tail})" for relation in self.relations)
        return f"FROM trajectories WHERE (project, trace_id, first_seen) IN ({keys})"

    def count_sql(self) -> str:
        """How many runs are selected, as one SQL expression."""
        conditions = " AND ".join(self.where)
        return " + ".join(f"(SELECT count(*) FROM {relation} WHERE {conditions})"
                          for relation in self.relations)


def select(project: str, f: TrajectoryFilter) -> Selection:
    """What `f` selects in the project, after its cursor. Online evaluation rules add their own
    conditions to it: what a rule's filter matches is exactly what the list shows
    (storage/rules.py)."""
    arg = Params(project)
    where = ["project = $1", *conditions(TrajectoryQuery, f.values, arg, _CUSTOM)]
    score_name = score_sort_name(f.sort)
    if score_name is not None:
        sort, having = _score_sort(score_name, arg)
        where.append(having)
    else:
        sort = SORTS[f.sort]
    if f.trace_ids is not None:
        where.append(f"trace_id = ANY({arg(list(f.trace_ids))}::text[])")
    if f.cursor is not None:
        op = "<" if f.descending else ">"
        where.append(f"({sort}, trace_id) {op} ({arg(f.cursor[0])}, {arg(f.cursor[1])})")
    text = f.values.get("q")
    relations = _with_words(text, arg) if _has_words(text) else ("trajectories",)
    return Selection(relations, where, arg, sort)


async def list_trajectories(conn: Connection, project: str, f: TrajectoryFilter
                            ) -> list[TrajectorySummaryRow]:
    s = select(project, f)
    direction = "DESC" if f.descending else "ASC"
    order, limit = f"{s.sort} {direction}, trace_id {direction}", s.arg(f.limit)
    sql = (f"SELECT {TrajectorySummaryRow.columns(sort=s.sort)} {s.sql(order, limit)} "
           f"ORDER BY {order} LIMIT {limit}")
    return TrajectorySummaryRow.from_records(await conn.fetch(sql, *s.arg.values))


async def count_trajectories(conn: Connection, project: str, f: TrajectoryFilter
                             ) -> int:
    """How many trajectories match the filter (the cursor and limit aside)."""
    s = select(project, replace(f, cursor=None))
    return int(await conn.fetchval(f"SELECT {s.count_sql()}", *s.arg.values))


async def trajectory_documents(conn: Connection, project: str, f: TrajectoryFilter
                               ) -> list[TrajectoryDocumentRow]:
    """Like list_trajectories, with the documents (for filling datasets)."""
    s = select(project, f)
    s.where.append(HAS_DOCUMENT)
    order, limit = "start_ns DESC, trace_id DESC", s.arg(f.limit)
    sql = (f"SELECT {TrajectoryDocumentRow.columns()} {s.sql(order, limit)} "
           f"ORDER BY {order} LIMIT {limit}")
    return TrajectoryDocumentRow.from_records(await conn.fetch(sql, *s.arg.values))


async def _by_key(conn: Connection, row: type[StoredRow], project: str, trace_id: str
                  ) -> StoredRow | None:
    """The trace's trajectory row, with `row`'s columns; None when there is none (yet)."""
    record = await conn.fetchrow(
        f"SELECT {row.columns()} FROM trajectories "
        f"WHERE project = $1 AND trace_id = $2 AND {in_trace_partition()}", project, trace_id)
    return row.from_record(record) if record is not None else None


async def trajectory(conn: Connection, project: str, trace_id: str
                     ) -> TrajectoryRow | None:
    return await _by_key(conn, TrajectoryRow, project, trace_id)


async def trajectory_export(conn: Connection, project: str, trace_id: str
                            ) -> TrajectoryExportRow | None:
    return await _by_key(conn, TrajectoryExportRow, project, trace_id)


async def explanation(conn: Connection, project: str, trace_id: str
                      ) -> ExplanationRow | None:
    return await _by_key(conn, ExplanationRow, project, trace_id)
