"""The SQL constructs Citus refuses (or runs somewhere else than intended) on the tables
storage/citus_tables.py distributes, found by parsing each statement with PostgreSQL's own
parser (pglast): tests/test_citus_statements.py runs them over every statement trajhub sends.

A statement is checked against the table classification only; what it refuses:
- a local table with a distributed or reference table in one statement (Citus plans no join,
  `INSERT … SELECT` or subquery between a coordinator-only table and a distributed one);
- a correlated subquery over a distributed table in a query whose FROM has a set-returning
  function (`FROM unnest(…) c WHERE (SELECT … FROM spans s WHERE s.trace_id = c.trace_id)`);
- a subquery (or LATERAL) over a distributed table correlated with the outer query other than by
  `trace_id = …` (Citus: "complex joins are only supported when all distributed tables are
  co-located and joined on their distribution columns");
- a function that is not IMMUTABLE in the `DO UPDATE SET` of an insert into a distributed or
  reference table;
- `INSERT … VALUES` with a subquery into a distributed or reference table, or a subquery in the
  RETURNING of an insert or update of one;
- a recursive CTE over a distributed table without a `trace_id =` filter;
- `FOR UPDATE` / `FOR SHARE` over a distributed table without a `trace_id =` filter (multi-shard);
- an update or delete of a reference table that reads a distributed table;
- a VOLATILE function (`clock_timestamp()`) in an update of a distributed or reference table,
  or one that is not IMMUTABLE (`now()`) in a CASE or COALESCE there;
- in an update or delete of a distributed or reference table, a STABLE function of a column
  (`settle_at + interval '1 s'`: timestamptz arithmetic is STABLE);
- an advisory lock taken in a statement over distributed or reference tables: Citus pushes it
  to the workers, so it no longer excludes the derivers, which take theirs on the coordinator.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pglast
import pglast.enums
from pglast import ast

from trajhub.storage import citus_tables

#: SQL-standard value functions (`CURRENT_TIMESTAMP`, …) are all STABLE
_VALUE_FUNCTION = ast.SQLValueFunction


def nodes(tree: Any) -> Iterator[ast.Node]:
    """Every node below `tree` (itself included), depth first."""
    if isinstance(tree, ast.Node):
        yield tree
        for field in tree.__slots__:
            yield from nodes(getattr(tree, field))
    elif isinstance(tree, (tuple, list)):
        for item in tree:
            yield from nodes(item)


def _cte_names(tree: Any) -> set[str]:
    return {n.ctename for n in nodes(tree) if isinstance(n, ast.CommonTableExpr)}


def tables(tree: Any, ctes: set[str] | None = None) -> set[str]:
    """trajhub's tables a (part of a) statement names."""
    ctes = _cte_names(tree) if ctes is None else ctes
    found = set()
    for n in nodes(tree):
        if isinstance(n, ast.RangeVar) and n.relname not in ctes and n.schemaname in (
                None, "public") and citus_tables.kind(n.relname) is not None:
            found.add(n.relname)
    return found


def _kinds(names: set[str]) -> set[str]:
    return {k for k in map(citus_tables.kind, names) if k is not None}


def _filters_trace_id(tree: Any, one: bool = False) -> bool:
    """True when `tree` has a `… trace_id = …` (or, unless `one`, `trace_id = ANY(…)`)
    condition."""
    for n in nodes(tree):
        if isinstance(n, ast.A_Expr) and n.name and getattr(n.name[-1], "sval", "") == "=" and (
                not one or n.kind == pglast.enums.A_Expr_Kind.AEXPR_OP):
            for side in (n.lexpr, n.rexpr):
                if isinstance(side, ast.ColumnRef) and getattr(
                        side.fields[-1], "sval", "") == citus_tables.DISTRIBUTION_COLUMN:
                    return True
    return False


def _function_name(call: ast.FuncCall) -> str:
    return ".".join(getattr(part, "sval", "") for part in call.funcname)


def _from_has_function(select: ast.SelectStmt) -> bool:
    return any(isinstance(n, ast.RangeFunction) for n in nodes(select.fromClause))


def _returning(stmt: Any) -> Any:
    """A statement's RETURNING list (the parser's field is named after its PostgreSQL
    version)."""
    return getattr(stmt, "returningClause", None) or getattr(stmt, "returningList", None)


def _has_column(tree: Any) -> bool:
    return any(isinstance(n, ast.ColumnRef) for n in nodes(tree))


def _interval(tree: Any) -> bool:
    """An interval-valued expression, as far as the parser can tell (a cast to interval, an
    interval literal, make_interval())."""
    for n in nodes(tree):
        if isinstance(n, ast.TypeCast) and getattr(n.typeName.names[-1], "sval", "") == "interval":
            return True
        if isinstance(n, ast.FuncCall) and _function_name(n) == "make_interval":
            return True
    return False


def _stable_of_column(stmt: Any, volatility: Callable[[str], str]) -> bool:
    """A function that is not IMMUTABLE applied to a column: a call with a column among its
    arguments, or timestamp arithmetic with an interval (a STABLE operator on timestamptz)."""
    for n in nodes(stmt):
        if isinstance(n, ast.FuncCall) and volatility(_function_name(n)) != "i" and (
                _has_column(n.args)):
            return True
        if isinstance(n, ast.A_Expr) and n.name and getattr(n.name[-1], "sval", "") in "+-":
            sides = (n.lexpr, n.rexpr)
            if any(_has_column(a) and not _interval(a) for a in sides) and any(
                    _interval(a) for a in sides):
                return True
    return False


def _aliases(tree: Any) -> set[str]:
    """The names the FROM items of a (sub)query go by inside it."""
    found = set()
    for n in nodes(tree):
        if isinstance(n, ast.RangeVar):
            found.add(n.alias.aliasname if n.alias else n.relname)
        elif isinstance(n, (ast.RangeSubselect, ast.RangeFunction)) and n.alias:
            found.add(n.alias.aliasname)
        elif isinstance(n, ast.CommonTableExpr):
            found.add(n.ctename)
    return found


def _correlated_off_trace_id(sub: Any, ctes: set[str]) -> bool:
    """A subquery over a distributed table that refers to the outer query's rows without an
    equality on `trace_id` between them: Citus plans no such join across shards."""
    if "distributed" not in _kinds(tables(sub, ctes)):
        return False
    inner = _aliases(sub)
    outer = [n for n in nodes(sub) if isinstance(n, ast.ColumnRef) and len(n.fields) == 2
             and getattr(n.fields[0], "sval", None) not in inner]
    if not outer:
        return False
    for n in nodes(sub):
        if isinstance(n, ast.A_Expr) and n.kind == pglast.enums.A_Expr_Kind.AEXPR_OP and (
                getattr(n.name[-1], "sval", "") == "="):
            sides = [x for x in (n.lexpr, n.rexpr) if isinstance(x, ast.ColumnRef)]
            if len(sides) == 2 and all(getattr(x.fields[-1], "sval", "") == (
                    citus_tables.DISTRIBUTION_COLUMN) for x in sides) and any(
                    x in outer for x in sides):
                return False
    return True


def problems(sql: str, volatility: Callable[[str], str]) -> list[str]:
    """What Citus would refuse in `sql` (one or more statements); `volatility` gives a
    function's `provolatile` ('i', 's' or 'v') by name."""
    try:
        statements = pglast.parse_sql(sql)
    except pglast.parser.ParseError:
        return []  # PL/pgSQL fragments and the like: not a statement trajhub sends as such
    found: list[str] = []
    for raw in statements:
        stmt = raw.stmt
        if not isinstance(stmt, (ast.SelectStmt, ast.InsertStmt, ast.UpdateStmt,
                                 ast.DeleteStmt)):
            continue
        ctes = _cte_names(stmt)
        names = tables(stmt, ctes)
        kinds = _kinds(names)
        if "local" in kinds and kinds & {"distributed", "reference"}:
            found.append("joins local with distributed/reference tables: "
                         + ", ".join(sorted(names)))
        for n in nodes(stmt):
            if isinstance(n, ast.SelectStmt) and _from_has_function(n):
                for part in (n.targetList, n.whereClause, n.havingClause):
                    for sub in nodes(part):
                        if isinstance(sub, ast.SubLink) and "distributed" in _kinds(
                                tables(sub.subselect, ctes)):
                            found.append("correlated subquery over a distributed table beside "
                                         "a set-returning function in FROM")
            if (isinstance(n, ast.SubLink) and _correlated_off_trace_id(n.subselect, ctes)) or (
                    isinstance(n, ast.RangeSubselect) and n.lateral
                    and _correlated_off_trace_id(n.subquery, ctes)):
                found.append("a subquery over a distributed table correlated on another "
                             "column than trace_id")
            if isinstance(n, ast.InsertStmt) and _kinds(tables(n.relation, ctes)) & {
                    "distributed", "reference"}:
                conflict = n.onConflictClause
                if conflict is not None and conflict.targetList:
                    for call in nodes(conflict.targetList):
                        if isinstance(call, _VALUE_FUNCTION) or (
                                isinstance(call, ast.FuncCall)
                                and volatility(_function_name(call)) != "i"):
                            found.append("a function that is not IMMUTABLE in DO UPDATE SET of "
                                         + n.relation.relname)
                values = getattr(n.selectStmt, "valuesLists", None)
                if values and any(isinstance(v, ast.SubLink) for v in nodes(values)):
                    found.append("INSERT … VALUES with a subquery into " + n.relation.relname)
            if isinstance(n, (ast.InsertStmt, ast.UpdateStmt)) and _kinds(
                    tables(n.relation, ctes)) & {"distributed", "reference"} and any(
                    isinstance(v, ast.SubLink) for v in nodes(_returning(n))):
                found.append("a subquery in RETURNING of an insert or update of "
                             + n.relation.relname)
            if isinstance(n, ast.WithClause) and n.recursive:
                for cte in n.ctes:
                    if "distributed" in _kinds(tables(cte.ctequery, ctes)) and not (
                            _filters_trace_id(cte.ctequery)):
                        found.append(f"recursive CTE {cte.ctename} over a distributed table "
                                     "without a trace_id filter")
            if isinstance(n, ast.SelectStmt) and n.lockingClause and "distributed" in _kinds(
                    tables(n.fromClause, ctes)) and not _filters_trace_id(n.whereClause, True):
                found.append("multi-shard FOR UPDATE")
            if isinstance(n, (ast.UpdateStmt, ast.DeleteStmt)) and _kinds(
                    tables(n.relation, ctes)) == {"reference"} and "distributed" in _kinds(
                    tables([n.fromClause if isinstance(n, ast.UpdateStmt) else n.usingClause,
                            n.whereClause], ctes)):
                found.append("a reference table changed from a distributed table")
            if isinstance(n, (ast.UpdateStmt, ast.DeleteStmt)) and _kinds(
                    tables(n.relation, ctes)) & {"distributed", "reference"} and (
                    _stable_of_column([getattr(n, f) for f in n.__slots__ if f != "withClause"],
                                      volatility)):
                found.append("a STABLE function of a column in an UPDATE or DELETE of "
                             + n.relation.relname)
            if isinstance(n, ast.UpdateStmt) and _kinds(tables(n.relation, ctes)) & {
                    "distributed", "reference"} and any(
                    isinstance(f, ast.FuncCall) and volatility(_function_name(f)) == "v"
                    for f in nodes([n.targetList, n.whereClause])):
                found.append("a VOLATILE function in an UPDATE of " + n.relation.relname)
            if isinstance(n, ast.UpdateStmt) and _kinds(tables(n.relation, ctes)) & {
                    "distributed", "reference"} and any(
                    (isinstance(f, ast.FuncCall) and volatility(_function_name(f)) != "i")
                    or (isinstance(f, ast.A_Expr) and _interval(f))
                    for c in nodes([n.targetList, n.whereClause])
                    if isinstance(c, (ast.CaseExpr, ast.CoalesceExpr)) for f in nodes(c)):
                found.append("a function that is not IMMUTABLE in a CASE or COALESCE of an "
                             "UPDATE of " + n.relation.relname)
            if isinstance(n, ast.FuncCall) and "advisory" in _function_name(n) and kinds & {
                    "distributed", "reference"}:
                found.append("an advisory lock in a statement over distributed tables")
    return found
