"""Pages of a newest-first list read by keyset on the row id: the rows, and the key of the next older page."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

Row = TypeVar("Row")


@dataclass(frozen=True)
class KeysetPage(Generic[Row]):
    rows: list[Row]
    next_before: str | int | None  # the id to pass as `before` for the next (older) page; None on the last page

    @classmethod
    def of(cls, fetched: Sequence[Row], limit: int) -> KeysetPage[Row]:
        """The page from up to `limit + 1` rows read newest first: one row past the limit means there is an
        older page, which starts below the last row shown."""
        rows = list(fetched[:limit])
        return cls(rows, rows[-1].id if len(fetched) > limit else None)
