-- question: How many turns do conversations have? (histogram of all_turns = human_turns + ai_turns)
--   Turns are runs of same-side items, in item order, instructions excluded:
--   user turn = run of user messages; ai (assistant) turn = run of reasoning, assistant messages and
--   tool calls (function/custom/hosted *_call, server_tool_use, Anthropic server *_tool_result);
--   tool turn = run of tool outputs (*_call_output); system turn = run of inline system/developer
--   messages. Items of no side (compaction, item_reference, unknown kinds) neither count nor split a run.
-- result: one row per all_turns value, ascending:
--   all_turns BIGINT, conversations BIGINT, share DOUBLE, human_turns BIGINT, ai_turns BIGINT,
--   tool_turns BIGINT, system_turns BIGINT (the last four: sums over those conversations)
-- params: none
WITH sides AS (
    SELECT conversation_id, item_index, CASE
        WHEN type LIKE '%call\_output' ESCAPE '\' THEN 'tool'
        WHEN type = 'message' THEN CASE
            WHEN role = 'user' THEN 'user'
            WHEN role = 'assistant' THEN 'assistant'
            WHEN role IN ('system', 'developer') THEN 'system'
        END
        WHEN type IN ('reasoning', 'server_tool_use') OR type LIKE '%\_call' ESCAPE '\'
            OR type LIKE '%\_tool\_result' ESCAPE '\' THEN 'assistant'
    END AS side
    FROM items
    WHERE section IS DISTINCT FROM 'instructions'
),
starts AS (  -- an item opens a turn when its side differs from the previous sided item's
    SELECT conversation_id, side,
           side IS DISTINCT FROM lag(side) OVER (PARTITION BY conversation_id ORDER BY item_index) AS opens
    FROM sides
    WHERE side IS NOT NULL
),
per_conversation AS (
    SELECT
        conversation_id,
        count(*) FILTER (WHERE opens AND side = 'user') AS human_turns,
        count(*) FILTER (WHERE opens AND side = 'assistant') AS ai_turns,
        count(*) FILTER (WHERE opens AND side = 'tool') AS tool_turns,
        count(*) FILTER (WHERE opens AND side = 'system') AS system_turns
    FROM starts
    GROUP BY conversation_id
),
turns AS (  -- conversations without any sided item have zero turns
    SELECT
        coalesce(t.human_turns, 0) AS human_turns, coalesce(t.ai_turns, 0) AS ai_turns,
        coalesce(t.tool_turns, 0) AS tool_turns, coalesce(t.system_turns, 0) AS system_turns
    FROM conversations AS c
    LEFT JOIN per_conversation AS t USING (conversation_id)
)
SELECT
    (human_turns + ai_turns)::BIGINT AS all_turns,
    count(*)::BIGINT AS conversations,
    (count(*) / sum(count(*)) OVER ())::DOUBLE AS share,
    sum(human_turns)::BIGINT AS human_turns,
    sum(ai_turns)::BIGINT AS ai_turns,
    sum(tool_turns)::BIGINT AS tool_turns,
    sum(system_turns)::BIGINT AS system_turns
FROM turns
GROUP BY all_turns
ORDER BY all_turns
