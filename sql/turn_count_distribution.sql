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
WITH counted AS (  -- per-shard counts (record_counts: turns computed per record at write time), summed
    SELECT
        all_turns,
        sum(records) AS conversations,
        sum(human_turns) AS human_turns,
        sum(ai_turns) AS ai_turns,
        sum(tool_turns) AS tool_turns,
        sum(system_turns) AS system_turns
    FROM record_counts
    WHERE status = 'written'
    GROUP BY all_turns
)
SELECT
    all_turns::BIGINT AS all_turns,
    conversations::BIGINT AS conversations,
    (conversations / sum(conversations) OVER ())::DOUBLE AS share,
    human_turns::BIGINT AS human_turns,
    ai_turns::BIGINT AS ai_turns,
    tool_turns::BIGINT AS tool_turns,
    system_turns::BIGINT AS system_turns
FROM counted
ORDER BY all_turns
