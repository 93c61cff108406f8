-- question: Which written records lost the most, and what did they lose?
-- result: at most $n rows, most losses first (ties: by conversation_id):
--   conversation_id VARCHAR, source_file VARCHAR, source_line BIGINT, source_format VARCHAR,
--   losses BIGINT, kinds VARCHAR[] (distinct, sorted), paths VARCHAR[] (first 5 pointers, sorted)
-- params:
-- param: n INTEGER = 10: how many records to list
WITH top AS (  -- rank on counts alone; only the top $n records' losses are gathered below
    SELECT conversation_id, count(*) AS losses
    FROM losses
    GROUP BY conversation_id
    ORDER BY losses DESC, conversation_id
    LIMIT $n
)
SELECT
    t.conversation_id,
    any_value(l.source_file) AS source_file,
    any_value(l.source_line)::BIGINT AS source_line,
    any_value(l.source_format) AS source_format,
    t.losses::BIGINT AS losses,
    list_sort(list_distinct(list(l.kind))) AS kinds,
    list_sort(list(l.path))[1:5] AS paths
FROM top AS t
JOIN losses AS l USING (conversation_id)
GROUP BY t.conversation_id, t.losses
ORDER BY t.losses DESC, t.conversation_id
