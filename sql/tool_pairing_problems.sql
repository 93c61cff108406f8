-- question: Which tool calls and tool outputs do not pair up? (an audit: no rows = healthy)
--   output_without_call: a tool output whose call_id no call of the same conversation has (or no call_id);
--   call_without_output: a tool call whose call_id no output of the same conversation answers (or with
--   no call_id);
--   duplicate_call_id: two or more calls of one conversation share a call_id (every such call is listed).
-- result: one row per offending item, by conversation and item:
--   conversation_id VARCHAR, source_file VARCHAR, source_line BIGINT, problem VARCHAR, call_id VARCHAR,
--   item_index BIGINT, type VARCHAR
-- params: none
WITH tools AS (
    SELECT conversation_id, source_file, source_line, call_id, item_index, type,
           type IN ('function_call', 'custom_tool_call') AS is_call
    FROM items
    WHERE type IN ('function_call', 'custom_tool_call', 'function_call_output', 'custom_tool_call_output')
),
-- the (conversation, call_id) groups that do not pair one call with its outputs; a healthy run has
-- none, so the join back below probes every tool item against a tiny table (a window over every
-- tool item and two anti-joins cost 3x more on a 10M-record run)
bad AS (
    SELECT conversation_id, call_id,
           count(*) FILTER (WHERE is_call) AS calls,
           count(*) FILTER (WHERE NOT is_call) AS outputs
    FROM tools
    GROUP BY conversation_id, call_id
    HAVING call_id IS NULL OR calls <> 1 OR outputs = 0
),
flagged AS (
    SELECT t.*, b.calls, b.outputs
    FROM tools AS t
    JOIN bad AS b ON t.conversation_id = b.conversation_id AND t.call_id IS NOT DISTINCT FROM b.call_id
)
SELECT conversation_id, source_file, source_line, 'output_without_call' AS problem, call_id, item_index, type
FROM flagged
WHERE NOT is_call AND (call_id IS NULL OR calls = 0)
UNION ALL
SELECT conversation_id, source_file, source_line, 'call_without_output', call_id, item_index, type
FROM flagged
WHERE is_call AND (call_id IS NULL OR outputs = 0)
UNION ALL
SELECT conversation_id, source_file, source_line, 'duplicate_call_id', call_id, item_index, type
FROM flagged
WHERE is_call AND call_id IS NOT NULL AND calls > 1
ORDER BY conversation_id, item_index, problem
