"""The skills extension (SEP-2640): list without reading, load with verification, read
supporting files on demand; against mcp_lite's own Server (in-process and over HTTP) and
through the Hub."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

import mcp_lite
from mcp_lite.errors import LocalProtocolError, SkillVerificationError
from mcp_lite.protocol import skills as sk
from mcp_lite.server import Server

SKILL_MD = """---
name: pdf-processing
description: Extract, fill, and assemble PDF documents
license: MIT
metadata:
  owner: docs-team
  version: 2
allowed-tools: [read, write]
---

# PDF processing

Use references/FORMS.md for forms.
"""
FORMS = "Forms: fill them in.\n"


@pytest.fixture
def skill_dir(tmp_path: Path) -> Path:
    root = tmp_path / "pdf-processing"
    (root / "references").mkdir(parents=True)
    (root / "SKILL.md").write_text(SKILL_MD, encoding="utf-8")
    (root / "references" / "FORMS.md").write_text(FORMS, encoding="utf-8")
    return root


def _server(skill_dir: Path, reads: list[str]) -> Server:
    server = Server("skills")
    uri = server.add_skill(skill_dir, path="docs/pdf-processing")
    assert uri == "skill://docs/pdf-processing/SKILL.md"
    original = server._registry.skills.read

    def counting(u: Any) -> Any:
        reads.append(u)
        return original(u)

    server._registry.skills.read = counting  # type: ignore[method-assign]
    return server


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
def test_list_reads_nothing_and_load_verifies(skill_dir: Path, era: str) -> None:
    reads: list[str] = []
    server = _server(skill_dir, reads)
    with mcp_lite.connect(server, protocol_version=era) as client:
        (skill,) = client.list_skills()
        assert skill.uri == "skill://docs/pdf-processing/SKILL.md"
        assert skill.name == "pdf-processing"
        assert skill.description.startswith("Extract")
        assert skill.frontmatter["metadata"] == {"owner": "docs-team", "version": 2}
        assert set(skill.files or {}) == {
            "skill://docs/pdf-processing/SKILL.md",
            "skill://docs/pdf-processing/references/FORMS.md",
        }
        assert reads == []  # listing never reads a file
        loaded = client.load_skill(skill.uri)
        assert reads == [skill.uri]  # only SKILL.md: supporting files wait until asked for
        assert loaded.body.lstrip().startswith("# PDF processing")
        assert loaded.read_text("references/FORMS.md") == FORMS
        assert loaded.read_text("references/FORMS.md") == FORMS  # verified once, then kept
        assert reads == [skill.uri, "skill://docs/pdf-processing/references/FORMS.md"]
        with pytest.raises(SkillVerificationError, match="not a file"):
            loaded.read("references/SECRET.md")
        assert len(reads) == 2  # an unlisted file is never fetched


def test_tampered_skill_md_is_refused(skill_dir: Path) -> None:
    reads: list[str] = []
    server = _server(skill_dir, reads)
    with mcp_lite.connect(server) as client:
        (skill,) = client.list_skills()
        (skill_dir / "SKILL.md").write_text(SKILL_MD.replace("forms.", "secrets."), "utf-8")
        with pytest.raises(SkillVerificationError, match="digest|bytes"):
            client.load_skill(skill)
        assert reads == [skill.uri]  # nothing read after the failure


def test_size_mismatch_is_refused(skill_dir: Path) -> None:
    server = _server(skill_dir, [])
    with mcp_lite.connect(server) as client:
        (skill,) = client.list_skills()
        (skill_dir / "SKILL.md").write_text(SKILL_MD + "more\n", "utf-8")
        with pytest.raises(SkillVerificationError, match="bytes"):
            client.load_skill(skill)


def test_supporting_file_changed_after_load_is_refused(skill_dir: Path) -> None:
    server = _server(skill_dir, [])
    with mcp_lite.connect(server) as client:
        loaded = client.load_skill(client.list_skills()[0])
        (skill_dir / "references" / "FORMS.md").write_text("Forms: exfiltrate!!!\n", "utf-8")
        with pytest.raises(SkillVerificationError, match="digest"):
            loaded.read("references/FORMS.md")


def test_frontmatter_must_match_the_entry() -> None:
    text = SKILL_MD.encode()
    entry = sk.parse_entry(
        {
            "uri": "skill://pdf-processing/SKILL.md",
            "frontmatter": {"name": "pdf-processing", "description": "Something else"},
            "resources": [
                {
                    "uri": "skill://pdf-processing/SKILL.md",
                    "digest": "sha256:" + hashlib.sha256(text).hexdigest(),
                    "size": len(text),
                }
            ],
        }
    )
    sk.check_file(entry, entry.uri, text)  # the bytes are what the entry promised...
    with pytest.raises(SkillVerificationError, match="description"):
        sk.check_frontmatter(entry, SKILL_MD)  # ...but the frontmatter is not


def test_get_skill_for_an_unlisted_uri(skill_dir: Path) -> None:
    server = _server(skill_dir, [])
    with mcp_lite.connect(server) as client:
        loaded = client.load_skill("skill://docs/pdf-processing/SKILL.md")  # via skills/get
        assert loaded.name == "pdf-processing"
        with pytest.raises(mcp_lite.RpcError):
            client.get_skill("skill://nope/SKILL.md")


def test_server_without_the_extension(skill_dir: Path) -> None:
    server = Server("plain")

    @server.tool()
    def noop() -> str:
        return "x"

    with mcp_lite.connect(server) as client, pytest.raises(LocalProtocolError, match="skills"):
        client.list_skills()


def test_over_http_and_through_the_hub(skill_dir: Path) -> None:
    server = _server(skill_dir, [])
    plain = Server("plain")

    @plain.tool()
    def noop() -> str:
        return "x"

    with server.serve_http(port=0) as http:
        with mcp_lite.connect(http.url) as client:
            loaded = client.load_skill(client.list_skills()[0])
            assert loaded.read_text("references/FORMS.md") == FORMS
        config = {"mcpServers": {"docs": {"type": "http", "url": http.url}}}
        with mcp_lite.Hub(config) as hub:
            skills = hub.skills()
            assert [(s.server, s.name) for s in skills] == [("docs", "pdf-processing")]
            assert hub.load_skill(skills[0]).body.lstrip().startswith("# PDF")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("name: a\ndescription: b\n", {"name": "a", "description": "b"}),
        (
            "name: 'it''s'\nn: 3\nf: 1.5\nt: true\nz: null\n",
            {"name": "it's", "n": 3, "f": 1.5, "t": True, "z": None},
        ),
        ("list:\n  - a\n  - b\nflow: [x, y]\n", {"list": ["a", "b"], "flow": ["x", "y"]}),
        ("m:\n  k: v\n  deep:\n    x: 1\n", {"m": {"k": "v", "deep": {"x": 1}}}),
        ('d: "quoted: yes"\n', {"d": "quoted: yes"}),
    ],
)
def test_frontmatter_subset(text: str, expected: dict[str, Any]) -> None:
    assert sk.parse_frontmatter(text) == expected


@pytest.mark.parametrize("bad", ["name a\n", "a: 1\na: 2\n", "x: &anchor 1\n", "  a: 1\n b: 2\n"])
def test_frontmatter_we_cannot_read_is_an_error(bad: str) -> None:
    with pytest.raises(ValueError):
        sk.parse_frontmatter(bad)
