"""How a trajectory's document and explanation are stored (migration 0020): zlib-compressed
UTF-8 in the bytea columns `document` and `explanation`; trajectories stored before that
migration keep their text in `document_text` and `explanation_text` until derived again.

Writers compress with `pack` (the deriving process, before its transaction); readers select
`DOCUMENT` / `EXPLANATION` (either form, as bytes) and get the text back with `unpack`, the
same bytes the API served before.
"""

from __future__ import annotations

import zlib

#: zlib level 1: ~3.3x smaller for loadgen's trajectories, at a fraction of the cost of
#: higher levels (bench/README.md, "The trajectory path, phase by phase")
LEVEL = 1
#: select expressions: the stored bytes in either form (NULL when derivation failed)
DOCUMENT = "coalesce(document, convert_to(document_text, 'UTF8'))"
EXPLANATION = "coalesce(explanation, convert_to(explanation_text, 'UTF8'))"
#: the trajectory has a document (its derivation did not fail)
HAS_DOCUMENT = "(document IS NOT NULL OR document_text IS NOT NULL)"
#: what a compressed value begins with (zlib's header for the default window, any level); a
#: JSON document or explanation begins with `{` or `[`
_ZLIB = 0x78


def pack(text: str | None) -> bytes | None:
    return None if text is None else zlib.compress(text.encode(), LEVEL)


def unpack(stored: bytes | str | None) -> str | None:
    """The text of a value selected with DOCUMENT or EXPLANATION."""
    if stored is None or isinstance(stored, str):
        return stored
    if stored[:1] and stored[0] == _ZLIB:
        return zlib.decompress(stored).decode()
    return stored.decode()
