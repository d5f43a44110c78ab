"""The distribution: one import package `trajhub`, its data files in the wheel, its version,
every runtime import declared as a dependency, and a client that does not pull in the server
and installs alone (clients/python, the `trajhub-client` distribution)."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

import trajhub
from tests.harness import python_output

ROOT = Path(__file__).parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
#: the folders that install as trajhub's subpackages, and trajhub/ itself
SOURCES = [ROOT / "trajhub", ROOT / "service", ROOT / "normalizers", ROOT / "storage",
           ROOT / "evaluators"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    """The wheel, built by pip with the setuptools of the test environment (the [test] extra
    pins one new enough, so no network is needed), from a copy of the source tree (so the
    build leaves nothing in the repository)."""
    src = tmp_path_factory.mktemp("src") / "trajhub"
    shutil.copytree(ROOT, src, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", ".venv", "__pycache__", "*.egg-info", "build", "dist", ".*_cache",
        ".hypothesis", ".trajhub"))
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
         "-w", str(out), str(src)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    [built] = out.glob("trajhub-*.whl")
    return zipfile.ZipFile(built)


@pytest.mark.integration  # starts processes
def test_the_wheel_installs_one_top_level_package(wheel: zipfile.ZipFile) -> None:
    names = wheel.namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"trajhub"}
    dist_info = next(n.split("/")[0] for n in names if ".dist-info/" in n)
    assert (wheel.read(f"{dist_info}/top_level.txt").decode().split()
            if f"{dist_info}/top_level.txt" in names else ["trajhub"]) == ["trajhub"]
    # every subpackage is there, with its package data
    for module in ("trajhub/__init__.py", "trajhub/__main__.py", "trajhub/py.typed",
                   "trajhub/client.py", "trajhub/service/cli/main.py",
                   "trajhub/service/client/api.py", "trajhub/service/api/trajectories.py",
                   "trajhub/service/ingest/http.py", "trajhub/service/workers/derivation.py",
                   "trajhub/normalizers/__init__.py", "trajhub/storage/migrate.py",
                   "trajhub/evaluators/__init__.py"):
        assert module in names, module
    migrations = sorted(p.name for p in (ROOT / "storage" / "migrations").glob("*.sql"))
    assert migrations
    assert sorted(n.rsplit("/", 1)[1] for n in names
                  if n.startswith("trajhub/storage/migrations/") and n.endswith(".sql")) \
        == migrations
    # nothing of the tests, benchmarks or deployment files
    assert not [n for n in names if n.startswith(("tests/", "bench/", "deploy/"))]


@pytest.mark.integration  # starts processes
def test_the_wheel_declares_the_version_and_the_command(wheel: zipfile.ZipFile) -> None:
    dist_info = next(n.split("/")[0] for n in wheel.namelist() if ".dist-info/" in n)
    metadata = wheel.read(f"{dist_info}/METADATA").decode()
    assert f"\nVersion: {trajhub.__version__}\n" in metadata
    entry_points = wheel.read(f"{dist_info}/entry_points.txt").decode()
    assert "trajhub = trajhub.service.cli.main:main" in entry_points


@pytest.mark.integration  # starts processes
def test_the_editable_install_imports_from_the_repository() -> None:
    # the test environment is the README's editable install (`uv pip install -e '.[test]'`)
    code = ("import trajhub, trajhub.service.cli.main, trajhub.storage.migrate, "
            "trajhub.normalizers, trajhub.evaluators, trajhub.client; "
            "print(trajhub.__version__); print(trajhub.service.cli.main.__file__)")
    version, main_file = python_output(code, cwd="/").split()
    assert version == trajhub.__version__
    assert Path(main_file).resolve() == (ROOT / "service" / "cli" / "main.py").resolve()
    assert importlib.metadata.version("trajhub") == trajhub.__version__


@pytest.mark.integration  # starts processes
def test_version_flag() -> None:
    for command in ([sys.executable, "-m", "trajhub", "--version"],
                    [str(Path(sys.executable).parent / "trajhub"), "--version"]):
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == f"trajhub {trajhub.__version__}"
    assert re.fullmatch(r"\d+\.\d+\.\d+", trajhub.__version__)


def _type_checking_only(tree: ast.Module) -> set[ast.AST]:
    """The nodes under `if TYPE_CHECKING:`: imported by type checkers only, never at run time."""
    inside: set[ast.AST] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                inside.update(ast.walk(child))
    return inside


def _imported_modules() -> dict[str, str]:
    """Top-level names of every absolute run-time import in trajhub's modules → one file that
    imports it."""
    found: dict[str, str] = {}
    for source in SOURCES:
        for path in source.rglob("*.py"):
            if path.is_symlink() or "__pycache__" in path.parts:
                continue
            tree = ast.parse(path.read_text(), str(path))
            typing_only = _type_checking_only(tree)
            for node in ast.walk(tree):
                if node in typing_only:
                    continue
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    found.setdefault(name.split(".")[0], str(path.relative_to(ROOT)))
    return found


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_imported_third_party_module_is_a_declared_dependency() -> None:
    # runtime dependencies, and the extras a user installs for an optional integration (for
    # example `langchain` for RecordedTools.langchain_tools); not the test or capture tooling
    runtime = list(PYPROJECT["project"]["dependencies"])
    for extra, requirements in PYPROJECT["project"]["optional-dependencies"].items():
        if extra not in ("test", "capture"):
            runtime += requirements
    declared = {_normalize(re.match(r"[A-Za-z0-9._-]+", r).group())  # type: ignore[union-attr]
                for r in runtime}
    providers = importlib.metadata.packages_distributions()
    imported = _imported_modules()
    assert "fastapi" in imported and "asyncpg" in imported  # the walk sees the real imports
    undeclared = {}
    for module, where in sorted(imported.items()):
        if module in sys.stdlib_module_names or module in ("trajhub", "__future__"):
            continue
        dists = {_normalize(d) for d in providers.get(module, [])}
        assert dists, f"{module} (imported by {where}) is not installed at all"
        if not dists & declared:
            undeclared[module] = (where, sorted(dists))
    assert not undeclared, f"imported but not in [project] dependencies: {undeclared}"


#: what the client must not load: the server's libraries, and trajhub's server-side parts
SERVER_MODULES = ("fastapi", "starlette", "asyncpg", "grpc", "uvicorn", "pgserver", "igraph",
                  "google", "orjson", "trajhub.service.api", "trajhub.storage",
                  "trajhub.normalizers", "trajhub.evaluators")


@pytest.mark.integration  # starts processes
def test_the_client_does_not_import_the_server() -> None:
    code = ("import sys; from trajhub.client import TrajhubClient, run_dataset; "
            "import trajhub.service.client.runner, trajhub.service.client.replay; "
            f"print(' '.join(sorted(m for m in sys.modules if m.startswith({SERVER_MODULES!r}))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


#: run in the client's own environment: it imports, answers in its models, and has none of the
#: server's libraries installed
_CLIENT_CHECK = """
import importlib.util, importlib.metadata, sys
import httpx
import trajhub.service.client.replay, trajhub.service.client.runner
from trajhub.client import TrajhubClient, run_dataset
answer = {"project": "p", "days": 30.0, "source": "project", "default_days": 7.0}
hub = TrajhubClient("http://trajhub.test",
                    transport=httpx.MockTransport(lambda r: httpx.Response(200, json=answer)))
print(type(hub.get_retention()).__name__)
print(" ".join(sorted(m for m in ("asyncpg", "grpc", "pgserver", "igraph", "fastapi", "orjson",
                                  "trajhub.storage", "trajhub.normalizers")
                      if importlib.util.find_spec(m) is not None)) or "-")
print(" ".join(sorted(d.metadata["Name"] for d in importlib.metadata.distributions()
                      if d.metadata["Name"].startswith("trajhub"))))
"""


@pytest.mark.integration  # starts processes
@pytest.mark.slow  # a virtual environment, and its packages from PyPI
def test_the_client_installs_alone(tmp_path: Path) -> None:
    # a copy of the checkout (the distribution links into it), as the wheel fixture makes
    src = tmp_path / "trajhub"
    shutil.copytree(ROOT, src, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", ".venv", "__pycache__", "*.egg-info", "build", "dist", ".*_cache",
        ".hypothesis", ".trajhub"))
    venv = tmp_path / "venv"
    python = venv / "bin" / "python"
    uv = Path(sys.executable).parent / "uv"
    if uv.exists():  # the README's test environment has uv: seconds instead of a minute
        steps = [[str(uv), "venv", "--quiet", "--python", sys.executable, str(venv)],
                 [str(uv), "pip", "install", "--quiet", "--python", str(python),
                  str(src / "clients" / "python")]]
    else:
        steps = [[sys.executable, "-m", "venv", str(venv)],
                 [str(python), "-m", "pip", "install", "--quiet",
                  str(src / "clients" / "python")]]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
    elsewhere = tmp_path / "run"  # not beside the copy, which `import trajhub` could find
    elsewhere.mkdir()
    done = subprocess.run([str(python), "-c", _CLIENT_CHECK], capture_output=True, text=True,
                          cwd=elsewhere, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["Retention", "-", "trajhub-client"], done.stdout


@pytest.mark.integration  # starts processes
def test_the_package_exports_the_client_lazily() -> None:
    code = ("import sys, trajhub; before = 'trajhub.client' in sys.modules; "
            "from trajhub import TrajhubClient, run_dataset; "
            "from trajhub.service.client import TrajhubClient as Same; "
            "print(before, TrajhubClient is Same, run_dataset.__module__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True", "trajhub.service.client.runner"]
