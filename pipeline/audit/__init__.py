"""Auditing a run: DuckDB views over a run directory, the ``sql/`` queries, output formats, HTML report.

>>> from pipeline.audit import open_run, load_query                          # doctest: +SKIP
>>> con = open_run("runs/r1")                                                # doctest: +SKIP
>>> load_query("loss_totals_by_kind").run(con).to_pylist()[:1]               # doctest: +SKIP
[{'kind': 'item_id', 'losses': 120, 'records': 40, 'share_of_written': 0.4}]
"""

from pipeline.audit.locate import notebook_run, resolve_run
from pipeline.audit.queries import Query, load_queries, load_query, query_names
from pipeline.audit.views import define_views, open_run

__all__ = [
    "Query",
    "define_views",
    "load_queries",
    "load_query",
    "notebook_run",
    "open_run",
    "query_names",
    "resolve_run",
]
