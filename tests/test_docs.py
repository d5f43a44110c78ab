"""The documents the code and the docs cite are in the repository.

Comments, docstrings and Markdown pages cite documents by path (`docs/otlp.md A5`,
`bench/README.md`). A cited path that is not in the repository leaves the reader with nothing
to check the code against (the specs once lived outside it, where CI cannot see them), so every
cited `*.md` path, and every path under a `docs` or `spec` folder, must resolve from the
repository root or from the citing file's folder, and a cited section (`§7`, `A5`) or link
anchor must exist in the document. docs/README.md indexes every page of docs/, and the README
points at docs/.

Pure file reading: no server, no database.
"""

from __future__ import annotations

import ast
import functools
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

#: folders never scanned: tooling, caches (and `.venv-capture`, the capture virtualenv
#: tests/capture/README.md makes, and `.venv-openai-v2`, the one README.md "Tests" makes), and
#: the captured third-party material of tests/fixtures (copied as received, citing the layout
#: it came from)
SKIP_DIRS = {".git", ".venv", ".venv-capture", ".venv-openai-v2", "venv", "node_modules",
             "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache", "build", "dist"}
SKIP_PATHS = {ROOT / "tests" / "fixtures"}

#: where the reference load generator and the capture clients live: next to the checkout,
#: outside the repository, as bench/README.md and tests/capture/README.md say
EXTERNAL_TOOL_ROOTS = ("../shared/bench/", "../shared/clients/")

HASH_COMMENTED = {".toml", ".yaml", ".yml", ".sh", ".cfg"}
SLASH_COMMENTED = {".js", ".mjs", ".ts", ".css"}

_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)
#: a path-like token, not glued to a preceding word, path or `repo@commit:` prefix
_TOKEN = re.compile(r"(?<![\w./@:*-])(?:\.\.?/)*[\w*.-]+(?:/[\w*.-]*)*")
#: a section after a cited document: `docs/otlp.md A5`, `… §7`, `… §1.1`, `… §a3`
_SECTION = re.compile(r"\s+(§\s?[\w]+(?:\.\d+)?|[AB]\d+\b)")
_MD_LINK = re.compile(r"\]\(([^)\s#]*)(?:#([^)\s]+))?\)")


def _walk() -> Iterator[Path]:
    stack = [ROOT]
    while stack:
        folder = stack.pop()
        for path in sorted(folder.iterdir()):
            if path.is_symlink():
                continue  # trajhub/ links the top-level packages: scan them once
            if path.is_dir():
                if (path.name not in SKIP_DIRS and not path.name.endswith(".egg-info")
                        and path not in SKIP_PATHS):
                    stack.append(path)
            elif path.is_file():
                yield path


def _python_text(source: str) -> str:
    """The comments and docstrings of a Python file."""
    parts: list[str] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                parts.append(token.string)
        tree = ast.parse(source)
    except (SyntaxError, tokenize.TokenError):
        return ""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            docstring = ast.get_docstring(node, clean=False)
            if docstring:
                parts.append(docstring)
    return "\n".join(parts)


def _cited_text(path: Path) -> str | None:
    """The part of a file that is prose: comments and docstrings of code, all of Markdown."""
    suffix = path.suffix.lower()
    if suffix not in {".py", ".md", ".sql", *HASH_COMMENTED, *SLASH_COMMENTED}:
        return None
    try:
        source = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None
    if suffix == ".py":
        return _python_text(source)
    if suffix == ".md":
        return source
    if suffix == ".sql":
        return "\n".join(re.findall(r"--.*$", source, re.MULTILINE))
    if suffix in HASH_COMMENTED:
        return "\n".join(re.findall(r"#.*$", source, re.MULTILINE))
    return "\n".join(re.findall(r"(?<![:\"'\\])//.*$|/\*.*?\*/", source,
                                re.MULTILINE | re.DOTALL))


def _is_citation(token: str) -> bool:
    return (token.endswith(".md") or token.startswith(("docs/", "spec/"))
            or token.startswith("../shared/"))


def _resolve(citing: Path, cited: str) -> Path | None:
    """The cited file, from the repository root or from the citing file's folder."""
    for base in (ROOT, citing.parent):
        if "*" in cited:
            found = sorted(base.glob(cited))
            if found:
                return found[0]
        else:
            target = (base / cited).resolve()
            if target.exists() and target.is_relative_to(ROOT):
                return target
    return None


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


@functools.cache  # a long document is cited hundreds of times
def _headings(document: Path) -> list[str]:
    text = document.read_text(encoding="utf-8")
    text = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    return [m.group(1) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*$", text, re.MULTILINE)]


def _has_section(document: Path, section: str) -> bool:
    label = section.replace("§", "").strip()
    return any(re.match(rf"§?{re.escape(label)}(?:[.\s]|$)", heading)
               for heading in _headings(document))


def _problems() -> list[str]:
    problems: list[str] = []
    for path in _walk():
        text = _cited_text(path)
        if not text:
            continue
        where = path.relative_to(ROOT)
        prose = _URL.sub(" ", text)
        for match in _TOKEN.finditer(prose):
            token = match.group(0).rstrip(".,;:")
            if not _is_citation(token):
                continue
            if token.startswith("../shared/"):
                if not token.startswith(EXTERNAL_TOOL_ROOTS):
                    problems.append(f"{where}: cites {token}, outside the repository")
                continue
            target = _resolve(path, token)
            if target is None:
                problems.append(f"{where}: cites {token}, which is not in the repository")
                continue
            section = _SECTION.match(prose, match.end())
            if (target.suffix == ".md" and section and token.startswith("docs/")
                    and not _has_section(target, section.group(1))):
                problems.append(f"{where}: cites {token} {section.group(1)}, which it has no "
                                "heading for")
        if path.suffix == ".md":
            for link, anchor in _MD_LINK.findall(_URL.sub(" ", text)):
                target = _resolve(path, link) if link else path
                if (anchor and target is not None and target.suffix == ".md"
                        and anchor not in {_slug(h) for h in _headings(target)}):
                    problems.append(f"{where}: links {link}#{anchor}, which has no such heading")
    return problems


def test_every_cited_document_is_in_the_repository() -> None:
    problems = _problems()
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("page", sorted(p.name for p in DOCS.glob("*.md") if p.name != "README.md"))
def test_docs_index_links_every_page(page: str) -> None:
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    assert f"]({page})" in index or f"]({page}#" in index, f"docs/README.md does not link {page}"


def test_readme_points_at_docs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert re.search(r"\]\(docs/(README\.md)?\)", readme), "README.md does not link docs/"
