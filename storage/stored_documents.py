"""How a trajectory's document and explanation are stored: compressed UTF-8 in the bytea columns
`document` and `explanation` (storage/compression.py; migration 0020 stored them zlib-compressed,
which still reads back); trajectories stored before migration 0020 keep their text in
`document_text` and `explanation_text` until derived again.

Writers compress with `pack` (the deriving process, before its transaction; the document
itself, orjson's bytes, goes to `compression.compress` as it is: service/derivation.py); readers
select `DOCUMENT` / `EXPLANATION` (either form, as bytes) and get the text back with `unpack`,
the same bytes the API served before.
"""

from __future__ import annotations

from trajhub.storage.compression import compress, decompress

#: select expressions: the stored bytes in either form (NULL when derivation failed)
DOCUMENT = "coalesce(document, convert_to(document_text, 'UTF8'))"
EXPLANATION = "coalesce(explanation, convert_to(explanation_text, 'UTF8'))"
#: the trajectory has a document (its derivation did not fail)
HAS_DOCUMENT = "(document IS NOT NULL OR document_text IS NOT NULL)"


def pack(text: str | None) -> bytes | None:
    return None if text is None else compress(text.encode())


def unpack(stored: bytes | str | None) -> str | None:
    """The text of a value selected with DOCUMENT or EXPLANATION."""
    if stored is None or isinstance(stored, str):
        return stored
    return decompress(stored).decode()
