-- question: Per dataset (input file), how many records were read, rejected and written, and what share of
--   the written records converted without any loss?
-- result: one row per input file, by file name:
--   dataset VARCHAR (source_file), read BIGINT, rejected BIGINT, written BIGINT, lossless BIGINT,
--   lossless_share DOUBLE (lossless / written; NULL when nothing was written)
-- params: none
WITH by_file AS (  -- per-shard counts (record_counts) of written and rejected records, summed
    SELECT
        source_file AS dataset,
        sum(records) AS read,
        coalesce(sum(records) FILTER (WHERE status = 'rejected'), 0) AS rejected,
        coalesce(sum(records) FILTER (WHERE status = 'written'), 0) AS written,
        coalesce(sum(records) FILTER (WHERE status = 'written' AND NOT lossy), 0) AS lossless
    FROM record_counts
    GROUP BY source_file
)
SELECT
    dataset,
    read::BIGINT AS read,
    rejected::BIGINT AS rejected,
    written::BIGINT AS written,
    lossless::BIGINT AS lossless,
    (lossless / nullif(written, 0))::DOUBLE AS lossless_share
FROM by_file
ORDER BY dataset
