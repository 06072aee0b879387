"""How the command line's tables are laid out so that they read at 80 columns and more: light
rules, headers that fold onto two lines, keys (policies, jobs, markets, times) never cut."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table


class ReportTable(Table):
    """A table that, too wide for the terminal, folds the text of its wrappable columns (their
    headers, at spaces) one column at a time, most room to save first and no more than needed,
    instead of cutting every column alike; ``no_wrap`` columns keep their width."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        self.fold(console, options)
        yield from super().__rich_console__(console, options)

    def fold(self, console: Console, options: ConsoleOptions) -> bool:
        """Fold columns until the table fits; failing that, one space between columns. Whether
        it then fits."""
        wrappable = [k for k, c in enumerate(self.columns) if not c.no_wrap]
        for padding in ((0, 1), (0, 1, 0, 0)):
            self.padding = padding
            for k in wrappable:
                self.columns[k].width = None
            ranges = [self._measure_column(console, options, c) for c in self.columns]
            total = sum(r.maximum for r in ranges) + self._extra_width
            for k in sorted(wrappable, key=lambda k: ranges[k].minimum - ranges[k].maximum):
                if total <= options.max_width:
                    return True
                narrower = min(ranges[k].maximum - ranges[k].minimum, total - options.max_width)
                self.columns[k].width = ranges[k].maximum - narrower - self._get_padding_width(k)
                total -= narrower
            if total <= options.max_width:
                return True
        return False


def report_table(title: str | None = None, caption: str | None = None) -> ReportTable:
    """A table with a rule under its header and no side borders, folded to the terminal."""
    return ReportTable(title=title, caption=caption, box=box.SIMPLE_HEAD, pad_edge=False,
                       show_edge=False, caption_justify="left")


def add_key_column(table: Table, header: str) -> None:
    """A column of names or times, kept on one line while the terminal is wide enough, folded
    whole onto the next rather than cut when it is not."""
    table.add_column(header, no_wrap=True, overflow="fold")


def add_number_columns(table: Table, *headers: str) -> None:
    """Right-aligned columns whose headers may fold at their spaces."""
    for header in headers:
        table.add_column(header, justify="right")


def keyed_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]],
                caption: str | None = None) -> ReportTable:
    """A table whose first column names each row and whose other columns are numbers."""
    table = report_table(title, caption)
    add_key_column(table, columns[0])
    add_number_columns(table, *columns[1:])
    for row in rows:
        table.add_row(*row)
    return table


def first_fitting(console: Console, tables: Sequence[ReportTable]) -> ReportTable:
    """The first of ``tables`` (ordered from the widest layout) that fits the console without
    cutting a cell, else the last."""
    return next((t for t in tables if t.fold(console, console.options)), tables[-1])
