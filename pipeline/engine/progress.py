"""A progress bar for long jobs (records, records/s, ETA by input bytes) on stderr, via rich."""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn


class JobProgress:
    """Progress of one run; silent when ``enabled`` is false (``--quiet``, ``--json``) or stderr is not a
    terminal (a log file or a pipe gets the summary, not a bar redrawn into it)."""

    def __init__(self, title: str, total_bytes: int, enabled: bool) -> None:
        self.records = 0
        self._start = time.perf_counter()
        self._progress: Progress | None = None
        self._task = None
        console = Console(stderr=True)
        if enabled and console.is_terminal:
            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                TaskProgressColumn(),
                TextColumn("{task.fields[records]:,} records, {task.fields[rate]:,.0f}/s"),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=console,
                transient=False,
            )
            self._task = self._progress.add_task(title, total=max(total_bytes, 1), records=0, rate=0.0)

    def __enter__(self) -> JobProgress:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._progress is not None:
            self._progress.stop()

    def skipped(self, nbytes: int) -> None:
        """Input covered by shards finished in an earlier run: counts toward the bar, not the rate."""
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, advance=nbytes)

    def note(self, text: str) -> None:
        """A line above the bar (e.g. a shard that is redone, and why); nothing when disabled."""
        if self._progress is not None:
            self._progress.console.print(text, markup=False, highlight=False)

    def advance(self, records: int, nbytes: int) -> None:
        self.records += records
        if self._progress is not None and self._task is not None:
            rate = self.records / max(time.perf_counter() - self._start, 1e-9)
            self._progress.update(self._task, advance=nbytes, records=self.records, rate=rate)
