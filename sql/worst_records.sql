-- question: Which written records lost the most, and what did they lose?
-- result: at most $n rows, most losses first (ties: by conversation_id):
--   conversation_id VARCHAR, source_file VARCHAR, source_line BIGINT, source_format VARCHAR,
--   losses BIGINT, kinds VARCHAR[] (distinct, sorted), paths VARCHAR[] (first 5 pointers, sorted)
-- params:
-- param: n INTEGER 0.. = 10: how many records to list
WITH candidates AS (
    -- n <= 100: each shard's 100 records with the most losses (top_losses/) hold the run's top n
    SELECT * FROM top_losses WHERE $n <= 100
    UNION ALL
    -- a longer list: every record of the record index (DuckDB skips the branch whose guard is false)
    SELECT conversation_id, source_file, source_line, source_format, losses, loss_kinds, loss_paths
    FROM records
    WHERE $n > 100 AND status = 'written' AND losses > 0
)
SELECT
    conversation_id,
    source_file,
    source_line::BIGINT AS source_line,
    source_format,
    losses::BIGINT AS losses,
    loss_kinds AS kinds,
    loss_paths AS paths
FROM candidates
ORDER BY losses DESC, conversation_id
LIMIT $n
