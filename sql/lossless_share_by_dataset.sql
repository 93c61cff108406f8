-- question: Per dataset (input file), how many records were read, rejected and written, and what share of
--   the written records converted without any loss?
-- result: one row per input file, by file name:
--   dataset VARCHAR (source_file), read BIGINT, rejected BIGINT, written BIGINT, lossless BIGINT,
--   lossless_share DOUBLE (lossless / written; NULL when nothing was written)
-- params: none
WITH lossy AS (
    SELECT DISTINCT conversation_id FROM losses
),
written AS (
    SELECT
        c.source_file AS dataset,
        count(*) AS written,
        count(*) FILTER (WHERE lossy.conversation_id IS NULL) AS lossless
    FROM conversations AS c
    LEFT JOIN lossy USING (conversation_id)
    GROUP BY c.source_file
),
rejected_by_file AS (
    SELECT source_file AS dataset, count(*) AS rejected FROM rejected GROUP BY source_file
)
SELECT
    dataset,
    (coalesce(w.written, 0) + coalesce(r.rejected, 0))::BIGINT AS read,
    coalesce(r.rejected, 0)::BIGINT AS rejected,
    coalesce(w.written, 0)::BIGINT AS written,
    coalesce(w.lossless, 0)::BIGINT AS lossless,
    (w.lossless / w.written)::DOUBLE AS lossless_share
FROM written AS w
FULL OUTER JOIN rejected_by_file AS r USING (dataset)
ORDER BY dataset
