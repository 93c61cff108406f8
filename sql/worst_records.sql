-- question: Which written records lost the most, and what did they lose?
-- result: at most $n rows, most losses first (ties: by conversation_id):
--   conversation_id VARCHAR, source_file VARCHAR, source_line BIGINT, source_format VARCHAR,
--   losses BIGINT, kinds VARCHAR[] (distinct, sorted), paths VARCHAR[] (first 5 pointers, sorted)
-- params:
-- param: n INTEGER = 10: how many records to list
SELECT
    conversation_id,
    any_value(source_file) AS source_file,
    any_value(source_line)::BIGINT AS source_line,
    any_value(source_format) AS source_format,
    count(*)::BIGINT AS losses,
    list_sort(list_distinct(list(kind))) AS kinds,
    list_sort(list(path))[1:5] AS paths
FROM losses
GROUP BY conversation_id
ORDER BY losses DESC, conversation_id
LIMIT $n
