"""``mcp-lite`` as a person meets it: --version, help, options before or after the command,
"did you mean" for a misspelt command, and the ``mcp-lite:`` prefix on library messages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_lite import __version__, _accel, cli
from mcp_lite.cli import parser
from mcp_lite.cli import run as cli_run

ROOT = Path(__file__).resolve().parents[2]
DEMO = f"{sys.executable} {ROOT / 'examples' / 'demo_server.py'}"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_process(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_lite", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        check=False,
    )


def test_version_says_version_python_and_speedups(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--version")
    assert code == 0
    assert out.startswith(f"mcp-lite {__version__} (Python {sys.version.split()[0]}")
    expected = "speedups: compiled" if _accel.USE_EXTENSIONS else "speedups: pure Python ("
    assert expected in out


def test_version_says_why_when_pure() -> None:
    proc = run_process("--version", env={"MCP_LITE_NO_EXTENSIONS": "1"})
    assert proc.returncode == 0, proc.stderr
    assert "speedups: pure Python (MCP_LITE_NO_EXTENSIONS is set)" in proc.stdout


def test_version_when_the_compiled_module_is_missing() -> None:
    code = (
        "import sys; sys.modules['mcp_lite._speedups'] = None\n"
        "from mcp_lite import cli; print(cli.version_text())"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False,
        env={k: v for k, v in os.environ.items() if k != "MCP_LITE_NO_EXTENSIONS"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "speedups: pure Python (" in proc.stdout
    assert "MCP_LITE_NO_EXTENSIONS" not in proc.stdout


def test_help_has_examples_exit_codes_and_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for needle in ("examples:", "exit codes:", "124", "defaults:", "(default: 60)", "--output"):
        assert needle in out
    code, out, _ = run(capsys, "call", "--help")
    assert code == 0
    assert "example:" in out and "mcp-lite call" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["--json", "--timeout", "30", "tools", "--stdio", DEMO],
        ["tools", "--json", "--timeout", "30", "--stdio", DEMO],
        ["--stdio", DEMO, "--json", "tools"],
    ],
    ids=["before", "after", "mixed"],
)
def test_global_options_before_or_after_the_command(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    assert "add" in [tool["name"] for tool in json.loads(out)]


def test_repeatable_options_merge_across_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    args = parser._parse(["--env", "A=1", "tools", "--env", "B=2", "--stdio", "x"])
    assert args.env == ["A=1", "B=2"]
    assert args.timeout == 60.0 and args.json is False


def test_misspelt_command_suggests_the_right_one(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "toolz")
    assert code == 2
    assert "did you mean 'tools'?" in err
    assert "mcp-lite: error:" in err


def test_library_warnings_carry_the_prefix() -> None:
    # A logged warning from the library during a CLI run (here: an --env without a stdio
    # server is harmless; we log through the library's logger directly from a tool-less run).
    code = (
        "import logging, sys\n"
        "from mcp_lite.cli import run\n"
        "with run._library_logs_prefixed():\n"
        "    logging.getLogger('mcp_lite.client').warning('something odd')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.stderr.strip() == "mcp-lite: warning: something odd"


def test_the_backstop_is_an_entry_on_the_process_timer(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import argparse
    import threading

    from mcp_lite import _timer
    from mcp_lite._deadline import Deadline

    exited = threading.Event()
    calls: list[tuple[str, int]] = []

    def fake_exit(code: int) -> None:
        calls.append((threading.current_thread().name, code))
        exited.set()

    monkeypatch.setattr(os, "_exit", fake_exit)
    monkeypatch.setattr(cli_run, "_BACKSTOP_GRACE", 0.0)
    withdrawn = cli_run._backstop(argparse.Namespace(deadline=Deadline.after(0.05), json=False))
    withdrawn.cancel()  # a run that ends in time cancels it: it never fires
    cli_run._backstop(argparse.Namespace(deadline=Deadline.after(0.05), json=False))
    assert not [t for t in threading.enumerate() if t.name == "mcp-lite-cli-backstop"]
    assert exited.wait(10)
    assert calls == [(_timer.thread_name, cli.EXIT_TIMEOUT)]
    assert "did not finish within" in capsys.readouterr().err
