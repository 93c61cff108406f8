"""The audit-fact views computed in SQL, for runs written before the engine wrote them.

A run written by this version has ``RUN/records/`` and the per-shard ``*_counts/`` folders
(docs/run-layout.md), and the ``sql/`` queries read those. A run written before has none of them;
for it :func:`pipeline.audit.views.define_views` defines views of the same names and columns
computed here from ``conversations``, ``items``, ``losses``, ``rejected`` and ``summary``, so
every query gives the same answer on either run, just as slowly as the queries did before (a
window over every item, count-distinct over every loss). ``tests/audit`` checks both: the
engine-written facts and these views against the same Python references.

Two differences that no query sees: ``records.shard`` is null here, and ``top_losses`` holds
every written record with a loss (a superset of the per-shard top 100 the engine writes).
"""

from __future__ import annotations

RECORDS = r"""
CREATE OR REPLACE VIEW records AS
WITH sides AS (  -- the turn rule of docs/audit.md, per item
    SELECT conversation_id, item_index, CASE
        WHEN type LIKE '%call\_output' ESCAPE '\' THEN 4
        WHEN type = 'message' THEN CASE
            WHEN role = 'user' THEN 1
            WHEN role = 'assistant' THEN 2
            WHEN role IN ('system', 'developer') THEN 5
        END
        WHEN type IN ('reasoning', 'server_tool_use') OR type LIKE '%\_call' ESCAPE '\'
            OR type LIKE '%\_tool\_result' ESCAPE '\' THEN 2
    END AS side
    FROM items
    WHERE section IS DISTINCT FROM 'instructions'
),
starts AS (  -- an item opens a turn when its side differs from the previous sided item's
    SELECT conversation_id, side,
           side IS DISTINCT FROM lag(side) OVER (PARTITION BY conversation_id ORDER BY item_index) AS opens
    FROM sides
    WHERE side IS NOT NULL
),
turns AS (
    SELECT conversation_id,
           count(*) FILTER (WHERE opens AND side = 1) AS human_turns,
           count(*) FILTER (WHERE opens AND side = 2) AS ai_turns,
           count(*) FILTER (WHERE opens AND side = 4) AS tool_turns,
           count(*) FILTER (WHERE opens AND side = 5) AS system_turns
    FROM starts
    GROUP BY conversation_id
),
compaction AS (
    SELECT conversation_id, count(*) AS compactions, max(item_index) AS last,
           sum(encrypted_bytes) AS encrypted_bytes
    FROM items
    WHERE type = 'compaction'
    GROUP BY conversation_id
),
lost AS (
    SELECT conversation_id, count(*) AS losses, list_sort(list_distinct(list(kind))) AS loss_kinds,
           list_sort(list(path))[1:5] AS loss_paths
    FROM losses
    WHERE kind NOT IN (SELECT kind FROM loss_kinds WHERE addition)  -- additions are not losses
    GROUP BY conversation_id
)
SELECT
    c.conversation_id, NULL::VARCHAR AS shard, c.source_file, c.source_line, c.source_format,
    (SELECT target FROM summary)::VARCHAR AS target_format, 'written' AS status, NULL::VARCHAR AS stage,
    c.n_items::INTEGER AS n_items,
    coalesce(t.human_turns, 0)::INTEGER AS human_turns, coalesce(t.ai_turns, 0)::INTEGER AS ai_turns,
    coalesce(t.tool_turns, 0)::INTEGER AS tool_turns, coalesce(t.system_turns, 0)::INTEGER AS system_turns,
    coalesce(t.human_turns + t.ai_turns, 0)::INTEGER AS all_turns,
    coalesce(k.compactions, 0)::INTEGER AS compactions,
    (c.n_items - 1 - k.last)::INTEGER AS items_after_last_compaction,
    coalesce(k.encrypted_bytes, 0)::BIGINT AS compaction_encrypted_bytes,
    coalesce(l.losses, 0)::INTEGER AS losses,
    coalesce(l.loss_kinds, []::VARCHAR[]) AS loss_kinds,
    coalesce(l.loss_paths, []::VARCHAR[]) AS loss_paths
FROM conversations AS c
LEFT JOIN turns AS t USING (conversation_id)
LEFT JOIN compaction AS k USING (conversation_id)
LEFT JOIN lost AS l USING (conversation_id)
UNION ALL BY NAME
SELECT conversation_id, NULL::VARCHAR AS shard, source_file, source_line, NULL::VARCHAR AS source_format,
       NULL::VARCHAR AS target_format, 'rejected' AS status, stage
FROM rejected
"""

# Every written record with a loss: a superset of each shard's top 100, so worst_records stays exact.
TOP_LOSSES = """
CREATE OR REPLACE VIEW top_losses AS
SELECT conversation_id, source_file, source_line, source_format, losses, loss_kinds, loss_paths
FROM records
WHERE status = 'written' AND losses > 0
"""

RECORD_COUNTS = """
CREATE OR REPLACE VIEW record_counts AS
SELECT
    source_file, source_format, target_format, status, stage, losses > 0 AS lossy, all_turns,
    count(*)::BIGINT AS records,
    coalesce(sum(losses), 0)::BIGINT AS losses,
    coalesce(sum(n_items), 0)::BIGINT AS n_items,
    coalesce(sum(human_turns), 0)::BIGINT AS human_turns,
    coalesce(sum(ai_turns), 0)::BIGINT AS ai_turns,
    coalesce(sum(tool_turns), 0)::BIGINT AS tool_turns,
    coalesce(sum(system_turns), 0)::BIGINT AS system_turns,
    count(*) FILTER (WHERE compactions > 0)::BIGINT AS compacted,
    coalesce(sum(compactions), 0)::BIGINT AS compactions,
    coalesce(max(compactions), 0)::BIGINT AS max_compactions,
    coalesce(sum(items_after_last_compaction), 0)::BIGINT AS items_after_last_compaction,
    coalesce(sum(compaction_encrypted_bytes), 0)::BIGINT AS compaction_encrypted_bytes
FROM records
GROUP BY ALL
"""

ITEM_COUNTS = """
CREATE OR REPLACE VIEW item_counts AS
SELECT source_format, type, role, count(*)::BIGINT AS items,
       count(DISTINCT conversation_id)::BIGINT AS conversations
FROM items
GROUP BY ALL
"""

PHASE_COUNTS = """
CREATE OR REPLACE VIEW phase_counts AS
SELECT source_format,
       coalesce(phase, CASE WHEN list_contains(null_fields, 'phase') THEN '(null)' ELSE '(absent)' END)
           AS phase,
       count(*)::BIGINT AS messages
FROM items
WHERE type = 'message' AND role = 'assistant'
GROUP BY ALL
"""

LOSS_COUNTS = """
CREATE OR REPLACE VIEW loss_counts AS
SELECT source_file, source_format, target_format, kind, count(*)::BIGINT AS losses,
       count(DISTINCT conversation_id)::BIGINT AS records
FROM losses
GROUP BY ALL
"""

# In dependency order: top_losses and record_counts read records.
DERIVED = {
    "records": RECORDS,
    "top_losses": TOP_LOSSES,
    "record_counts": RECORD_COUNTS,
    "item_counts": ITEM_COUNTS,
    "phase_counts": PHASE_COUNTS,
    "loss_counts": LOSS_COUNTS,
}
