-- question: Which target API rules (docs/target-rules.md) made the conversion repair or reject
--   records, how often, and in how many records? A repair is a loss whose detail starts with the
--   rule's id (`chat.tool_name: 'a.b' -> ...`); a rejection is a record the convert stage refused
--   with the rule's id as the reason (`encode: chat.tool_calls_answered: ...`).
-- result: one row per (rule, outcome), most records first:
--   rule VARCHAR, outcome VARCHAR ('repaired' or 'rejected'), kind VARCHAR (the repair's loss
--   kind; null for a rejection), occurrences BIGINT (losses, or rejected records), records BIGINT,
--   example_file VARCHAR, example_line BIGINT, example VARCHAR (the first such record's loss
--   detail or rejection reason, exactly)
-- params: none
WITH events AS (
    SELECT
        regexp_extract(detail, '^((chat|responses|anthropic|hf)\.[a-z_]+): ', 1) AS rule,
        'repaired' AS outcome,
        kind,
        conversation_id,
        source_file,
        source_line,
        detail AS example
    FROM losses
    WHERE regexp_matches(detail, '^(chat|responses|anthropic|hf)\.[a-z_]+: ')
    UNION ALL
    SELECT
        regexp_extract(reason, '^encode: ((chat|responses|anthropic|hf)\.[a-z_]+): ', 1),
        'rejected',
        NULL,
        conversation_id,
        source_file,
        source_line,
        reason
    FROM rejected
    WHERE stage = 'convert' AND regexp_matches(reason, '^encode: (chat|responses|anthropic|hf)\.[a-z_]+: ')
)
SELECT
    rule,
    outcome,
    any_value(kind) AS kind,
    count(*)::BIGINT AS occurrences,
    count(DISTINCT conversation_id)::BIGINT AS records,
    arg_min(source_file, (source_file, source_line, example)) AS example_file,
    arg_min(source_line, (source_file, source_line, example))::BIGINT AS example_line,
    arg_min(example, (source_file, source_line, example)) AS example
FROM events
GROUP BY rule, outcome
ORDER BY records DESC, rule, outcome
