-- Question: how many user, assistant, tool and system turns does each conversation have?
-- Result: one row per conversation: conversation_id, human_turns, ai_turns, tool_turns, system_turns,
-- all_turns (int32). A turn is a run of consecutive items with the same label (pipeline.transforms.turns);
-- items without a label (compaction, references, unknown kinds) belong to no turn and split none.
-- Parameter: $path, the canonical Parquet file(s).
WITH items AS (
    SELECT c.conversation_id, u.i, u.it
    FROM read_parquet($path) AS c,
         LATERAL (SELECT unnest(c.items) AS it, generate_subscripts(c.items, 1) AS i) AS u
),
labelled AS (
    SELECT conversation_id, i,
        CASE
            WHEN it.type IN ('function_call_output', 'custom_tool_call_output')
                 OR suffix(it.type, '_call_output') THEN 'tool'
            WHEN it.type = 'message' THEN
                CASE WHEN it.role IN ('user', 'assistant') THEN it.role
                     WHEN it.role IN ('system', 'developer') THEN 'system' END
            WHEN it.type IN ('reasoning', 'function_call', 'custom_tool_call', 'server_tool_use')
                 OR suffix(it.type, '_call') OR suffix(it.type, '_tool_result') THEN 'assistant'
        END AS label
    FROM items
),
runs AS (
    SELECT conversation_id, label,
        label IS DISTINCT FROM lag(label) OVER (PARTITION BY conversation_id ORDER BY i) AS starts
    FROM labelled
    WHERE label IS NOT NULL
),
counts AS (
    SELECT conversation_id,
        CAST(count(*) FILTER (WHERE starts AND label = 'user') AS INTEGER) AS human_turns,
        CAST(count(*) FILTER (WHERE starts AND label = 'assistant') AS INTEGER) AS ai_turns,
        CAST(count(*) FILTER (WHERE starts AND label = 'tool') AS INTEGER) AS tool_turns,
        CAST(count(*) FILTER (WHERE starts AND label = 'system') AS INTEGER) AS system_turns
    FROM runs
    GROUP BY conversation_id
)
SELECT c.conversation_id,
    coalesce(n.human_turns, 0) AS human_turns,
    coalesce(n.ai_turns, 0) AS ai_turns,
    coalesce(n.tool_turns, 0) AS tool_turns,
    coalesce(n.system_turns, 0) AS system_turns,
    CAST(coalesce(n.human_turns, 0) + coalesce(n.ai_turns, 0) AS INTEGER) AS all_turns
FROM read_parquet($path) AS c
LEFT JOIN counts AS n USING (conversation_id)
ORDER BY c.conversation_id
