"""Skills served by ``Server.add_skill`` (``io.modelcontextprotocol/skills``): a directory with a
``SKILL.md`` published under ``skill://<path>/``, digests and sizes computed from the disk
when asked (see docs/explanation/server.md, "Skills").
"""

from __future__ import annotations

import base64
import os
import threading
from pathlib import Path
from typing import Any

from ..errors import InvalidParams
from ..protocol import skills as sk

__all__ = ["SkillSet"]

MAX_FILE = 8 * 1024 * 1024
MAX_FILES = 1000


class _Skill:
    def __init__(self, root: Path, path: str, frontmatter: dict[str, Any]) -> None:
        self.root = root
        self.path = path
        self.frontmatter = frontmatter
        self.base = f"skill://{path}/"
        self.uri = self.base + "SKILL.md"

    def files(self) -> list[Path]:
        found: list[Path] = []
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                if not name.startswith("."):
                    found.append(Path(dirpath) / name)
                    if len(found) > MAX_FILES:
                        raise InvalidParams(f"skill {self.uri!r} has more than {MAX_FILES} files")
        return found

    def uri_of(self, file: Path) -> str:
        return self.base + file.relative_to(self.root).as_posix()

    def entry(self) -> dict[str, Any]:
        resources = []
        for f in self.files():
            data = _read(f)
            resources.append(
                {"uri": self.uri_of(f), "digest": sk.digest_of(data), "size": len(data)}
            )
        return {"uri": self.uri, "frontmatter": dict(self.frontmatter), "resources": resources}


def _read(file: Path) -> bytes:
    size = file.stat().st_size
    if size > MAX_FILE:
        raise InvalidParams(f"{file.name} is larger than {MAX_FILE} bytes")
    return file.read_bytes()


class SkillSet:
    """The skills one ``Server`` publishes."""

    def __init__(self) -> None:
        self._skills: dict[str, _Skill] = {}
        self._lock = threading.Lock()

    def __bool__(self) -> bool:
        return bool(self._skills)

    def add(self, directory: str | os.PathLike[str], path: str | None = None) -> str:
        root = Path(directory)
        text = (root / "SKILL.md").read_text(encoding="utf-8")
        front = sk.parse_frontmatter(sk.split_frontmatter(text)[0])
        name = front.get("name")
        if not isinstance(name, str) or not isinstance(front.get("description"), str):
            raise ValueError(f"{root / 'SKILL.md'}: frontmatter needs 'name' and 'description'")
        path = (path or name).strip("/")
        if path.rsplit("/", 1)[-1] != name:
            raise ValueError(f"the skill path {path!r} must end with the skill's name {name!r}")
        skill = _Skill(root, path, front)
        with self._lock:
            self._skills[skill.uri] = skill
        return skill.uri

    def _all(self) -> list[_Skill]:
        with self._lock:
            return list(self._skills.values())

    def list(self, params: dict[str, Any], page_size: int | None) -> dict[str, Any]:
        skills = self._all()
        start = 0
        cursor = params.get("cursor")
        if cursor is not None:
            try:
                start = int(base64.urlsafe_b64decode(str(cursor).encode()).decode())
            except ValueError:
                raise InvalidParams(f"Invalid cursor: {cursor!r}"[:200]) from None
        end = len(skills) if page_size is None else start + page_size
        out: dict[str, Any] = {"skills": [s.entry() for s in skills[start:end]]}
        if end < len(skills):
            out["nextCursor"] = base64.urlsafe_b64encode(str(end).encode()).decode()
        return out

    def get(self, params: dict[str, Any]) -> dict[str, Any]:
        uri = params.get("uri")
        with self._lock:
            skill = self._skills.get(uri) if isinstance(uri, str) else None
        if skill is None:
            raise InvalidParams(f"Unknown skill: {uri!r}")
        return {"skill": skill.entry()}

    def read(self, uri: Any) -> dict[str, Any] | None:
        """The ``resources/read`` result for a skill file, or None when not one of ours."""
        if not isinstance(uri, str) or not uri.startswith("skill://"):
            return None
        for skill in self._all():
            if not uri.startswith(skill.base):
                continue
            for f in skill.files():
                if skill.uri_of(f) == uri:
                    data = _read(f)
                    mime = "text/markdown" if f.suffix.lower() == ".md" else None
                    try:
                        item: dict[str, Any] = {"uri": uri, "text": data.decode("utf-8")}
                        item["mimeType"] = mime or "text/plain"
                    except UnicodeDecodeError:
                        item = {"uri": uri, "blob": base64.b64encode(data).decode("ascii")}
                        item["mimeType"] = "application/octet-stream"
                    return {"contents": [item]}
        return None
