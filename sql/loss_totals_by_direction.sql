-- question: For each conversion direction (source format -> target format), how many written records lost
--   something, and how many losses were reported?
-- result: one row per source format of the written records, by source format:
--   source_format VARCHAR, target_format VARCHAR (the run's target when the source reported no loss),
--   written BIGINT, records_with_losses BIGINT, losses BIGINT, lossless_share DOUBLE
-- params: none
WITH written AS (
    SELECT source_format, count(*) AS written FROM conversations GROUP BY source_format
),
lost AS (
    SELECT source_format, target_format, count(*) AS losses, count(DISTINCT conversation_id) AS records
    FROM losses
    GROUP BY source_format, target_format
)
SELECT
    w.source_format,
    coalesce(l.target_format, (SELECT target FROM summary))::VARCHAR AS target_format,
    w.written::BIGINT AS written,
    coalesce(l.records, 0)::BIGINT AS records_with_losses,
    coalesce(l.losses, 0)::BIGINT AS losses,
    (1 - coalesce(l.records, 0) / w.written)::DOUBLE AS lossless_share
FROM written AS w
LEFT JOIN lost AS l USING (source_format)
ORDER BY w.source_format, target_format
