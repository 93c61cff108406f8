-- question: Which tool calls and tool outputs do not pair up? (an audit: no rows = healthy)
--   output_without_call: a tool output whose call_id no call of the same conversation has (or no call_id);
--   call_without_output: a tool call whose call_id no output of the same conversation answers (or with
--   no call_id);
--   duplicate_call_id: two or more calls of one conversation share a call_id (every such call is listed).
-- result: one row per offending item, by conversation and item:
--   conversation_id VARCHAR, source_file VARCHAR, source_line BIGINT, problem VARCHAR, call_id VARCHAR,
--   item_index BIGINT, type VARCHAR
-- params: none
WITH calls AS (
    SELECT conversation_id, source_file, source_line, call_id, item_index, type,
           count(*) OVER (PARTITION BY conversation_id, call_id) AS same_id
    FROM items
    WHERE type IN ('function_call', 'custom_tool_call')
),
outputs AS (
    SELECT conversation_id, source_file, source_line, call_id, item_index, type
    FROM items
    WHERE type IN ('function_call_output', 'custom_tool_call_output')
)
SELECT conversation_id, source_file, source_line, 'output_without_call' AS problem, call_id, item_index, type
FROM outputs AS o
WHERE o.call_id IS NULL
   OR NOT EXISTS (SELECT 1 FROM calls AS c WHERE c.conversation_id = o.conversation_id AND c.call_id = o.call_id)
UNION ALL
SELECT conversation_id, source_file, source_line, 'call_without_output', call_id, item_index, type
FROM calls AS c
WHERE NOT EXISTS (
    SELECT 1 FROM outputs AS o WHERE o.conversation_id = c.conversation_id AND o.call_id = c.call_id
)
UNION ALL
SELECT conversation_id, source_file, source_line, 'duplicate_call_id', call_id, item_index, type
FROM calls
WHERE same_id > 1 AND call_id IS NOT NULL
ORDER BY conversation_id, item_index, problem
