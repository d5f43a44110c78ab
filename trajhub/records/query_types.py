"""The types of a list's filters (trajhub.records' `Query` classes): bounded texts and
integers and times, as the REST API checks them and /openapi.json declares them. Plain pydantic,
so that the client may read the query classes; trajhub.service.api.params re-exports them."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field

from trajhub.records import Condition

INT64_MAX = 2**63 - 1
#: the longest text a filter takes (names, ids, search text)
MAX_TEXT = 1000


def no_nul(value: str) -> str:
    # PostgreSQL text cannot hold NUL: a filter with one can match nothing, say so instead
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    return value


#: a text query parameter: no NUL, at most MAX_TEXT characters
Text = Annotated[str, Field(max_length=MAX_TEXT), AfterValidator(no_nul)]


def whole_number(value: Any) -> Any:
    # JSON Schema counts 28.0 as an integer (a number with no fraction), so a body may send
    # one; pydantic's strict mode would refuse it
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


#: a count or size held in a bigint column
# (the bounds before the validator: after it, pydantic writes them into the JSON Schema as
# `ge`/`le`, which JSON Schema does not know)
Int64 = Annotated[int, Field(ge=0, le=INT64_MAX), BeforeValidator(whole_number)]
#: a time a filter takes: Unix nanoseconds (within a signed 64-bit integer; the pattern stops
#: at ±9,222,999,999,999,999,999), or an RFC 3339 time with its
#: offset, in the years a signed 64-bit count of nanoseconds reaches (1678-2262; the pattern
#: keeps to 1680-2261). Written out so /openapi.json tells a client which texts are times.
TIME_PATTERN = (
    r"^(-?([0-9]{1,18}|[1-8][0-9]{18}|9[01][0-9]{17}|92[01][0-9]{16}|922[0-2][0-9]{15})|"
    r"((1(6[89][0-9]|[7-9][0-9]{2})|2([01][0-9]{2}|2[0-5][0-9]|26[01]))-"
    r"((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|"
    r"02-(0[1-9]|1[0-9]|2[0-8]))|"
    # February 29th of the leap years (1680-2261: every fourth year but 1700, 1800, 1900,
    # 2100 and 2200), so that a date that does not exist is not a time the document promises
    r"(16(8[048]|9[26])|1[7-9](0[48]|[2468][048]|[13579][26])|"
    r"2[01](0[48]|[2468][048]|[13579][26])|2000|22(0[48]|[24][048]|[135][26]|60))-02-29)"
    r"[T ]([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
    r"(\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9]))$")
_TIME = re.compile(TIME_PATTERN)


def time_text(value: str) -> str:
    if not _TIME.match(value):
        raise ValueError(f"must be an RFC 3339 time with its offset (Z or +hh:mm) between the "
                         f"years 1680 and 2261, or Unix nanoseconds; got {value[:80]!r}")
    return value


#: a time parameter (see TIME_PATTERN); `time_ns` turns it into Unix nanoseconds
TimeText = Annotated[str, Field(max_length=100, json_schema_extra={"pattern": TIME_PATTERN}),
                     AfterValidator(time_text)]


#: what `parse_score_condition` (trajhub.records.scores) takes, as /openapi.json declares it (a
#: number of at most 20 digits and a 2-digit exponent: no text it matches overflows to infinity)
SCORE_CONDITION_PATTERN = (r"^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,99}"
                           r"((>=|<=)[+-]?([0-9]{1,20}(\.[0-9]{0,20})?|\.[0-9]{1,20})"
                           r"([eE][+-]?[0-9]{1,2})?|!?=.+)$")

#: a score condition: the pattern documents it, the API's own check (service/api/records.py,
#: `filter_values`) names what is wrong
ScoreConditionText = Annotated[str, Field(
    max_length=MAX_TEXT, json_schema_extra={"pattern": SCORE_CONDITION_PATTERN}),
    AfterValidator(no_nul)]
#: a list's score filter: parsed by the API (trajhub.records.scores, `parse_score_condition`),
#: its condition built by storage
ScoreFilter = Annotated[ScoreConditionText | None,
                        Condition(convert="score", custom=True, metavar="NAME<OP>VALUE")]
