"""Open a ``.qdpx`` zip safely: no zip slip, no zip bomb.

Nothing is ever extracted to disk; entries are read into memory, and only after their
names and sizes have been checked:

* an entry whose name is absolute (``/x``, ``\\x``, ``C:x``) or holds a ``..`` part
  refuses the whole file (zip slip);
* an entry over :data:`MAX_ENTRY_BYTES`, entries together over :data:`MAX_TOTAL_BYTES`,
  more than :data:`MAX_ENTRIES` entries, or an entry that expands more than
  :data:`MAX_RATIO` times (when over :data:`RATIO_FLOOR_BYTES`) refuse it too (zip bomb).
  Sizes are checked from the directory before reading and again while reading, since a
  crafted directory may lie.
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from study.refi._model import ProjectFileError

#: Largest uncompressed entry read (a source text, the project XML).
MAX_ENTRY_BYTES = 256 * 1024 * 1024
#: Largest total of the uncompressed entries.
MAX_TOTAL_BYTES = 1024 * 1024 * 1024
#: Most entries in one archive.
MAX_ENTRIES = 200_000
#: Largest ratio of uncompressed to compressed size of an entry...
MAX_RATIO = 200
#: ...checked for entries larger than this (small files compress well).
RATIO_FLOOR_BYTES = 1024 * 1024

_DRIVE = re.compile(r"^[A-Za-z]:")


@dataclass(frozen=True)
class Limits:
    """The limits an archive is read under (defaults: the module's constants)."""

    entry_bytes: int = MAX_ENTRY_BYTES
    total_bytes: int = MAX_TOTAL_BYTES
    entries: int = MAX_ENTRIES
    ratio: float = MAX_RATIO
    ratio_floor: int = RATIO_FLOOR_BYTES


def unsafe_name(name: str) -> bool:
    """Whether a path (in a zip or a ``relative://`` reference) could leave its folder."""
    if name.startswith(("/", "\\")) or _DRIVE.match(name):
        return True
    return any(part == ".." for part in re.split(r"[/\\]", name))


class Archive:
    """A checked zip: entry names looked up case-insensitively, reads bounded."""

    def __init__(self, path: Path, *, limits: Limits) -> None:
        self.path = path
        self.limits = limits
        try:
            self._zip = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise ProjectFileError(f"not a readable zip file ({exc})", path=path) from None
        infos = [i for i in self._zip.infolist() if not i.is_dir()]
        if len(infos) > limits.entries:
            raise ProjectFileError(
                f"holds {len(infos)} entries, more than the {limits.entries} allowed",
                path=path,
            )
        total = 0
        for info in infos:
            if unsafe_name(info.filename):
                raise ProjectFileError(
                    f"holds the entry {info.filename!r}, whose path is absolute or climbs "
                    "out of the archive (zip slip); refused",
                    path=path,
                )
            self._check_size(info.filename, info.file_size, info.compress_size)
            total += info.file_size
        if total > limits.total_bytes:
            raise ProjectFileError(
                f"expands to {total} bytes, more than the {limits.total_bytes} allowed "
                "(zip bomb?); refused",
                path=path,
            )
        self._read_total = 0
        self._by_name = {i.filename.replace("\\", "/").casefold(): i for i in infos}

    def _check_size(self, name: str, size: int, compressed: int) -> None:
        if size > self.limits.entry_bytes:
            raise ProjectFileError(
                f"entry {name!r} expands to {size} bytes, more than the "
                f"{self.limits.entry_bytes} allowed (zip bomb?); refused",
                path=self.path,
            )
        if size > self.limits.ratio_floor and size > self.limits.ratio * max(compressed, 1):
            raise ProjectFileError(
                f"entry {name!r} expands {size / max(compressed, 1):.0f} times, more than the "
                f"{self.limits.ratio:g} allowed (zip bomb?); refused",
                path=self.path,
            )

    def close(self) -> None:
        self._zip.close()

    def names(self) -> list[str]:
        """Every file entry's name, as stored."""
        return [i.filename for i in self._by_name.values()]

    def find(self, name: str) -> str | None:
        """The stored name matching ``name`` case-insensitively (``/`` or ``\\``), if any."""
        info = self._by_name.get(str(PurePosixPath(name.replace("\\", "/"))).casefold())
        return None if info is None else info.filename

    def read(self, name: str) -> bytes:
        """An entry's bytes, never more than the limits allow, whatever its header says."""
        info = self._by_name[name.replace("\\", "/").casefold()]
        limit = self.limits.entry_bytes
        try:
            with self._zip.open(info) as handle:
                data = handle.read(limit + 1)
        except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError) as exc:
            raise ProjectFileError(f"cannot read entry {name!r} ({exc})", path=self.path) from None
        self._check_size(name, len(data), info.compress_size)
        self._read_total += len(data)
        if self._read_total > self.limits.total_bytes:
            raise ProjectFileError(
                f"expands to more than the {self.limits.total_bytes} bytes allowed "
                "(zip bomb?); refused",
                path=self.path,
            )
        return data
