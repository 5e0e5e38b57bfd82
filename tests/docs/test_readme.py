"""Every code block of README.md, DESCRIPTION.md, CHANGELOG.md and docs/ runs as written.

- ```python blocks run alone (imports included) in a fresh interpreter from the repo root,
  with the test's virtualenv first on PATH (so ``python`` and ``mcp-lite`` are this checkout's).
- ```sh / ```bash blocks run through ``bash -e`` the same way.
- ```cron lines: the command part (after the five time fields) runs under cron's own bare
  environment (``PATH=/usr/bin:/bin``), so it must name the console script by its full path;
  ``/srv/app`` in a cron line stands for the checkout (replaced by the repo root here) and
  ``/var/log`` for a scratch directory.
- ```json blocks must parse.
- A block with ``<!-- readme-test: skip: <reason> -->`` on the line above it (blank lines
  allowed in between) is skipped, and the reason is shown in the test report.

Each block gets a scratch HOME (no real ``~/.claude.json`` or token store is read or written)
and a timeout; a failure prints the block with line numbers and what it wrote.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = (
    "README.md",
    "DESCRIPTION.md",
    "CHANGELOG.md",
    *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md")),
)
TIMEOUT = 180  # seconds per block: generous for a loaded machine, finite for a hang
SKIP = re.compile(r"<!--\s*readme-test:\s*skip:\s*(.*?)\s*-->")
FENCE = re.compile(r"^(\s*)```+\s*([\w+-]*)\s*$")
RUNNABLE = {"python", "py", "sh", "bash", "shell", "cron", "json"}
CRON_CHECKOUT = "/srv/app"


@dataclass(frozen=True)
class Block:
    doc: str
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    skip: str | None

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}-{self.lang}"


def extract(doc: str) -> list[Block]:
    """The fenced blocks of a Markdown file, with the skip reason written above each."""
    lines = (ROOT / doc).read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, lang = match.group(1), match.group(2).lower()
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and not re.match(r"^\s*```+\s*$", lines[i]):
            body.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1  # the closing fence
        above = start - 1
        while above >= 0 and not lines[above].strip():
            above -= 1
        skip = SKIP.search(lines[above]) if above >= 0 else None
        blocks.append(
            Block(doc, start + 1, lang, "\n".join(body) + "\n", skip.group(1) if skip else None)
        )
    return blocks


ALL_BLOCKS = [block for doc in DOCS for block in extract(doc)]


def numbered(block: Block) -> str:
    return "\n".join(
        f"{block.line + n:5d}  {text}" for n, text in enumerate(block.code.splitlines(), 1)
    )


def environment(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env.update(
        HOME=str(home),
        XDG_CACHE_HOME=str(home / ".cache"),
        MCP_LITE_AUTH_DIR=str(home / "oauth"),
        PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
        PYTHONUNBUFFERED="1",
    )
    env.pop("VIRTUAL_ENV", None)
    return env


def run(argv: list[str], env: dict[str, str], block: Block) -> None:
    try:
        proc = subprocess.run(
            argv,
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{block.id} did not finish within {TIMEOUT} s:\n{numbered(block)}\n{exc}")
    if proc.returncode != 0:
        pytest.fail(
            f"{block.id} exited {proc.returncode}:\n{numbered(block)}\n"
            f"--- stdout ---\n{proc.stdout[-3000:]}\n--- stderr ---\n{proc.stderr[-3000:]}"
        )


def cron_command(line: str) -> str:
    """The command part of a crontab line (after minute, hour, day, month, weekday)."""
    fields = line.split(None, 5)
    assert len(fields) == 6, f"not a crontab line: {line!r}"
    return fields[5]


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=[b.id for b in ALL_BLOCKS])
def test_block_runs_as_written(block: Block, tmp_path: Path) -> None:
    if block.skip is not None:
        pytest.skip(f"{block.id}: {block.skip}")
    if block.lang not in RUNNABLE:
        pytest.skip(f"{block.id}: a {block.lang or 'plain'} block is not code to run")
    env = environment(tmp_path)
    if block.lang in ("python", "py"):
        run([sys.executable, "-c", block.code], env, block)
    elif block.lang in ("sh", "bash", "shell"):
        run(["bash", "-e", "-c", block.code], env, block)
    elif block.lang == "json":
        json.loads(block.code)
    elif block.lang == "cron":
        logs = tmp_path / "log"
        logs.mkdir()
        cron_env = {
            "PATH": "/usr/bin:/bin",
            "HOME": env["HOME"],
            "SHELL": "/bin/sh",
            "LANG": "C.UTF-8",
        }
        for line in block.code.splitlines():
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            command = cron_command(line)
            assert "%" not in command.replace("\\%", ""), "cron turns % into a newline"
            program = shlex.split(command)[0]
            assert program.startswith("/"), (
                f"cron's PATH is /usr/bin:/bin: use a full path, not {program!r}"
            )
            command = command.replace(CRON_CHECKOUT, str(ROOT)).replace("/var/log", str(logs))
            run(["/bin/sh", "-c", command], cron_env, block)


def test_the_docs_have_runnable_blocks() -> None:
    """The extractor finds the blocks (a broken fence would silently skip everything)."""
    readme = [b for b in ALL_BLOCKS if b.doc == "README.md"]
    assert sum(b.lang == "python" and b.skip is None for b in readme) >= 2
    assert any(b.lang == "sh" and b.skip is None for b in readme)
    docs = [b for b in ALL_BLOCKS if b.doc.startswith("docs/")]
    assert sum(b.lang == "python" and b.skip is None for b in docs) >= 30
    assert any(b.lang == "cron" for b in docs)
    for block in ALL_BLOCKS:
        assert block.skip is None or block.skip.strip(), f"{block.id}: a skip needs a reason"
