"""The plain text of a ``.docx`` source (python-docx), read as safely as the project.

NVivo keeps a source's text in the ``.docx`` that ``richTextPath`` names and may write a
plain-text rendition holding a single newline. The text is the document's paragraphs,
one a line, tables' cells included in document order. The ``.docx`` is itself a zip:
its entries' sizes are checked against the project's limits before python-docx opens
it (whose XML parser resolves no entities).
"""

from __future__ import annotations

import io
import zipfile

#: Largest uncompressed total of a ``.docx``'s entries.
MAX_DOCX_BYTES = 128 * 1024 * 1024
#: Largest expansion of an entry over its compressed size (for entries over 1 MB).
MAX_DOCX_RATIO = 200


class DocxError(ValueError):
    """A ``.docx`` that cannot be read; the message says why, in a few words."""


def docx_text(data: bytes) -> str:
    """The text of a ``.docx`` given as bytes.

    Raises:
        DocxError: not a ``.docx``, damaged, or larger than the limits.
    """
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            total = 0
            for info in archive.infolist():
                total += info.file_size
                big = info.file_size > 1024 * 1024
                if big and info.file_size > MAX_DOCX_RATIO * max(info.compress_size, 1):
                    raise DocxError(f"its entry {info.filename!r} expands too far (zip bomb?)")
            if total > MAX_DOCX_BYTES:
                raise DocxError(f"it expands to {total} bytes, over {MAX_DOCX_BYTES}")
    except zipfile.BadZipFile:
        raise DocxError("it is not a .docx (not a zip file)") from None

    import docx
    from docx.opc.exceptions import PackageNotFoundError

    try:
        document = docx.Document(io.BytesIO(data))
    except (PackageNotFoundError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise DocxError(f"it is not a readable .docx ({exc})") from None
    except Exception as exc:  # lxml's XMLSyntaxError and kin: a damaged document part
        raise DocxError(f"its document cannot be parsed ({type(exc).__name__})") from None
    lines: list[str] = []
    for block in document.iter_inner_content():
        if hasattr(block, "rows"):
            lines.extend("\t".join(cell.text for cell in row.cells) for row in block.rows)
        else:
            lines.append(block.text)
    return "\n".join(lines)
