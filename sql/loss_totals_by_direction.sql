-- question: For each conversion direction (source format -> target format), how many written records lost
--   something, and how many losses were reported? (Additions, loss_kinds.addition, are not losses.)
-- result: one row per source format of the written records, by source format:
--   source_format VARCHAR, target_format VARCHAR (the run's target when the source reported no loss),
--   written BIGINT, records_with_losses BIGINT, losses BIGINT, lossless_share DOUBLE
-- params: none
WITH written AS (  -- per-shard counts of written records (record_counts), summed; one target per run
    SELECT
        source_format,
        target_format,
        sum(records) AS written,
        coalesce(sum(records) FILTER (WHERE lossy), 0) AS records_with_losses
    FROM record_counts
    WHERE status = 'written'
    GROUP BY source_format, target_format
),
lost AS (  -- every loss row on disk (loss_counts sums losses/ exactly), additions left out
    SELECT source_format, target_format, sum(losses) AS losses
    FROM loss_counts
    WHERE kind NOT IN (SELECT kind FROM loss_kinds WHERE addition)
    GROUP BY ALL
)
SELECT
    w.source_format,
    w.target_format::VARCHAR AS target_format,
    w.written::BIGINT AS written,
    w.records_with_losses::BIGINT AS records_with_losses,
    coalesce(l.losses, 0)::BIGINT AS losses,
    (1 - w.records_with_losses / w.written)::DOUBLE AS lossless_share
FROM written AS w
LEFT JOIN lost AS l USING (source_format, target_format)
ORDER BY w.source_format, target_format
