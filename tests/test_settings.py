"""Settings of `trajhub serve`: one typed object fed by flags, TRAJHUB_* variables and defaults,
with one-line errors for invalid values and a --help that lists each one."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trajhub.service import config

ROOT = Path(__file__).parent.parent

#: the documented defaults (README, "Configuration"), by variable
DOCUMENTED = {
    "TRAJHUB_HOST": "127.0.0.1",
    "TRAJHUB_HTTP_PORT": "4318",
    "TRAJHUB_GRPC_PORT": "4317",
    "TRAJHUB_DATA_DIR": "~/.trajhub",
    "TRAJHUB_MAX_REQUEST_BYTES": str(64 * 1024 * 1024),
    "TRAJHUB_INGEST_WORKERS": "4",
    "TRAJHUB_MAX_INFLIGHT_REQUESTS": "32",
    "TRAJHUB_SETTLE_SECONDS": "3.0",
    "TRAJHUB_DERIVATION_WORKERS": "1",
    "TRAJHUB_SHUTDOWN_TIMEOUT": "10.0",
    "TRAJHUB_LOG_LEVEL": "info",
}


def trajhub(*argv: str, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("TRAJHUB_")}
    return subprocess.run([sys.executable, "-m", "trajhub", *argv], capture_output=True,
                          text=True, cwd=ROOT, timeout=60, env={**base, **(env or {})})


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    config.add_arguments(parser)
    return parser.parse_args(argv)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for key in list(os.environ):
        if key.startswith("TRAJHUB_"):
            monkeypatch.delenv(key)
    return monkeypatch


def test_flags_win_over_variables_which_win_over_defaults(clean_env: pytest.MonkeyPatch
                                                          ) -> None:
    defaults = config.settings_from(parse())
    assert (defaults.host, defaults.http_port, defaults.grpc_port) == ("127.0.0.1", 4318, 4317)
    assert defaults.data_dir == str(Path.home() / ".trajhub")
    assert defaults.shutdown_timeout == 10.0 and defaults.prices == ""

    clean_env.setenv("TRAJHUB_HTTP_PORT", "9000")
    clean_env.setenv("TRAJHUB_SETTLE_SECONDS", "0.5")
    clean_env.setenv("TRAJHUB_CORS_ORIGINS", "http://a.example, http://b.example")
    from_env = config.settings_from(parse())
    assert from_env.http_port == 9000 and from_env.settle_seconds == 0.5
    assert from_env.cors_origin_list == ["http://a.example", "http://b.example"]

    flagged = config.settings_from(parse("--http-port", "9100", "--prices", "/etc/prices.json"))
    assert flagged.http_port == 9100 and flagged.prices == "/etc/prices.json"
    assert flagged.settle_seconds == 0.5  # the variable still applies where no flag is given


def test_the_deprecated_settings_still_set_the_derivation_ones(clean_env: pytest.MonkeyPatch
                                                                ) -> None:
    clean_env.setenv("TRAJHUB_ASSEMBLY_WORKERS", "3")
    clean_env.setenv("TRAJHUB_ASSEMBLY_INTERVAL_SECONDS", "0.7")
    settings = config.settings_from(parse())
    assert (settings.derivation_workers, settings.derivation_interval_seconds) == (3, 0.7)
    assert config.deprecated_env_in_use() == [
        "TRAJHUB_ASSEMBLY_WORKERS is deprecated and will be removed; use "
        "TRAJHUB_DERIVATION_WORKERS",
        "TRAJHUB_ASSEMBLY_INTERVAL_SECONDS is deprecated and will be removed; use "
        "TRAJHUB_DERIVATION_INTERVAL_SECONDS"]
    # the new name wins over the old one, and a flag over both
    clean_env.setenv("TRAJHUB_DERIVATION_WORKERS", "2")
    assert config.settings_from(parse()).derivation_workers == 2
    assert config.settings_from(parse("--derivation-workers", "5")).derivation_workers == 5


def test_an_invalid_value_names_its_flag_or_variable(clean_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(config.SettingsError) as flag:
        config.settings_from(parse("--grpc-port", "70000"))
    assert str(flag.value).startswith("--grpc-port '70000': ")
    assert "65535" in str(flag.value)
    clean_env.setenv("TRAJHUB_INGEST_WORKERS", "many")
    with pytest.raises(config.SettingsError) as env:
        config.settings_from(parse())
    assert str(env.value).startswith("TRAJHUB_INGEST_WORKERS='many': ")
    assert "integer" in str(env.value)


@pytest.mark.integration  # starts processes
@pytest.mark.parametrize(("argv", "env", "names"), [
    (["--http-port", "abc"], {}, "--http-port 'abc'"),
    ([], {"TRAJHUB_HTTP_PORT": "abc"}, "TRAJHUB_HTTP_PORT='abc'"),
    ([], {"TRAJHUB_GRPC_PORT": "-1"}, "TRAJHUB_GRPC_PORT='-1'"),
    (["--log-level", "loud"], {}, "--log-level 'loud'"),
    (["--settle-seconds", "soon"], {}, "--settle-seconds 'soon'"),
])
def test_serve_with_an_invalid_setting_is_one_line_and_exit_2(
        argv: list[str], env: dict[str, str], names: str) -> None:
    done = trajhub("serve", *argv, env=env)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"trajhub: {names}: "), done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


@pytest.mark.integration  # starts processes
def test_serve_help_lists_every_setting_with_its_variable_and_default() -> None:
    done = trajhub("serve", "--help", env={"TRAJHUB_JUDGE_API_KEY": "sk-secret"})
    assert done.returncode == 0
    text = " ".join(done.stdout.split())  # argparse wraps lines
    for name in config.Settings.model_fields:
        flag = "--" + name.replace("_", "-")
        env = "TRAJHUB_" + name.upper()
        assert f"{flag} " in text and f"[env {env}; default " in text, name
    for env, default in DOCUMENTED.items():
        assert f"[env {env}; default {default}]" in text, env
    assert "[env TRAJHUB_JUDGE_API_KEY; default (hidden)]" in text
    assert "sk-secret" not in done.stdout


@pytest.mark.integration  # starts processes
def test_rederive_takes_only_the_database_settings() -> None:
    done = trajhub("rederive", "--help")
    text = " ".join(done.stdout.split())
    for env in ("TRAJHUB_DATABASE_URL", "TRAJHUB_DATA_DIR", "TRAJHUB_LOG_LEVEL"):
        assert f"[env {env}; " in text
    assert "--http-port" not in text
