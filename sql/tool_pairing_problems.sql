-- question: Which tool calls and tool outputs do not pair up? (an audit: no rows = healthy)
--   output_without_call: a tool output whose call_id no call of the same conversation has, or an
--   output without call_id with no unanswered call without call_id before it;
--   call_without_output: a tool call whose call_id no output of the same conversation answers, or a
--   call without call_id that no output without call_id answers;
--   duplicate_call_id: two or more calls of one conversation share a call_id (every such call is listed).
--   Calls and outputs without call_id (ShareGPT rows, id-less HF or Anthropic rows) pair by position,
--   as the encoders pair them (docs/conversion.md, "Calls without ids"): each such output answers the
--   oldest unanswered such call before it. The encoders give them ids, reported as loss kind
--   generated_id, not as a pairing problem.
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
    WHERE call_id IS NOT NULL
    GROUP BY conversation_id, call_id
    HAVING calls <> 1 OR outputs = 0
),
flagged AS (
    SELECT t.*, b.calls, b.outputs
    FROM tools AS t
    JOIN bad AS b ON t.conversation_id = b.conversation_id AND t.call_id = b.call_id
),
-- pairing by position, over the id-less calls and outputs only (none on a run whose calls have
-- ids): balance = calls - outputs so far; an output finds no call exactly when the balance falls
-- below every earlier balance and below 0 (the queue of unanswered calls is empty)
idless AS (
    SELECT conversation_id, source_file, source_line, item_index, type, is_call,
           sum(CASE WHEN is_call THEN 1 ELSE -1 END) OVER w AS balance,
           count(*) FILTER (WHERE is_call) OVER w AS call_rank
    FROM tools
    WHERE call_id IS NULL
    WINDOW w AS (PARTITION BY conversation_id ORDER BY item_index ROWS UNBOUNDED PRECEDING)
),
unanswerable AS (
    SELECT *,
           NOT is_call AND balance < least(0, coalesce(min(balance) OVER (
               PARTITION BY conversation_id ORDER BY item_index
               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)) AS lonely
    FROM idless
),
-- outputs take the oldest unanswered call, so the answered calls are the first `answered` ones
answered AS (
    SELECT conversation_id, count(*) FILTER (WHERE NOT is_call AND NOT lonely) AS answered
    FROM unanswerable
    GROUP BY conversation_id
)
SELECT conversation_id, source_file, source_line, 'output_without_call' AS problem, call_id, item_index, type
FROM flagged
WHERE NOT is_call AND calls = 0
UNION ALL
SELECT conversation_id, source_file, source_line, 'call_without_output', call_id, item_index, type
FROM flagged
WHERE is_call AND outputs = 0
UNION ALL
SELECT conversation_id, source_file, source_line, 'duplicate_call_id', call_id, item_index, type
FROM flagged
WHERE is_call AND calls > 1
UNION ALL
SELECT conversation_id, source_file, source_line, 'output_without_call', NULL, item_index, type
FROM unanswerable
WHERE lonely
UNION ALL
SELECT u.conversation_id, u.source_file, u.source_line, 'call_without_output', NULL, u.item_index, u.type
FROM unanswerable AS u
JOIN answered AS a USING (conversation_id)
WHERE u.is_call AND u.call_rank > a.answered
ORDER BY conversation_id, item_index, problem
