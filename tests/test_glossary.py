"""One word per concept (docs/glossary.md): the words it retires appear nowhere in the code, the
API's descriptions, the CLI, the UI or the docs, but in the glossary itself, which says what
replaced them, and the dated bench log, which quotes the past."""

from __future__ import annotations

import re

import pytest

from tests.test_docs import ROOT, _walk

pytestmark = pytest.mark.unit

#: a retired word and the glossary's word for the concept
RETIRED = {"evaluation set": "dataset", "evaluation-set": "dataset",
           "annotation queue": "review queue", "annotation-queue": "review queue",
           "evaluation run": "evaluation"}
#: where a retired word may stand: the glossary, history, and this test
KEPT = ("docs/glossary.md", "bench/log-", "storage/migrations/", "tests/test_glossary.py")
TEXT = (".py", ".md", ".js", ".html", ".css", ".sh", ".toml")


def test_no_retired_word_is_used() -> None:
    # "evaluation runner" (the worker) is a different word
    pattern = re.compile("|".join(re.escape(w) for w in RETIRED) + r"(?!ner)", re.IGNORECASE)
    found = []
    for path in _walk():
        name = str(path.relative_to(ROOT))
        if name.startswith(KEPT) or not name.endswith(TEXT):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = pattern.search(line)
            if match:
                found.append(f"{name}:{number}: {match.group(0)!r} "
                             f"(say {RETIRED[match.group(0).lower()]!r})")
    assert not found, "\n".join(found)
