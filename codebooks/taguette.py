"""A codebook as Taguette reads one: a CSV of ``tag`` and ``description``.

Taguette (1.5) imports a codebook from a CSV whose header names exactly one of ``tag``,
``name`` or ``path`` and, optionally, ``description``; it reads no ``.qdc``. Each code is
a row: its tag is the path of names from the top of the codebook, levels joined by ``.``
(Taguette's way of naming nested tags, shown in its tag list as a hierarchy); its
description is the definition with the criteria and examples, laid out as in a ``.qdc``
(:func:`codebooks.qdc.describe`). UTF-8 with a byte-order mark, which Taguette's
encoding detection recognises. Cells are not guarded against spreadsheet formulas: the
file is for Taguette, which would keep the guard as part of a tag.
"""

from __future__ import annotations

import csv
import io

from codebooks.errors import CodebookError
from codebooks.model import Codebook
from codebooks.qdc import describe

#: Joins the levels of a tag's path.
SEPARATOR = "."
#: Longest tag path Taguette accepts.
MAX_TAG = 200


def taguette_csv_bytes(codebook: Codebook) -> bytes:
    """The codebook as Taguette's codebook CSV (module docstring).

    Raises:
        CodebookError: a code's path of names is longer than Taguette accepts.
    """
    by_id = {c.id: c for c in codebook.codes}
    out = io.StringIO(newline="")
    writer = csv.writer(out)
    writer.writerow(["tag", "description"])
    for code in codebook.codes:
        names = [code.name]
        parent = code.parent
        while parent is not None:
            names.append(by_id[parent].name)
            parent = by_id[parent].parent
        tag = SEPARATOR.join(reversed(names))
        if len(tag) > MAX_TAG:
            raise CodebookError(
                f"code {code.name!r}: its tag {tag[:40]!r}... is longer than the "
                f"{MAX_TAG} characters Taguette accepts"
            )
        writer.writerow([tag, describe(code)])
    return out.getvalue().encode("utf-8-sig")
