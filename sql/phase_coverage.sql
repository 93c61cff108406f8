-- question: Which phase do assistant messages carry (commentary, final_answer, an explicit null, or none)?
-- result: one row per (source_format, phase), by source format then most messages first:
--   source_format VARCHAR, phase VARCHAR ('(null)': sent as null, '(absent)': no phase key),
--   messages BIGINT, share DOUBLE (of that source format's assistant messages)
-- params: none
WITH assistant AS (
    SELECT
        source_format,
        coalesce(phase, CASE WHEN list_contains(null_fields, 'phase') THEN '(null)' ELSE '(absent)' END)
            AS phase_state
    FROM items
    WHERE type = 'message' AND role = 'assistant'
),
counted AS (
    SELECT source_format, phase_state, count(*) AS messages FROM assistant GROUP BY source_format, phase_state
)
SELECT
    source_format,
    phase_state AS phase,
    messages::BIGINT AS messages,
    (messages / sum(messages) OVER (PARTITION BY source_format))::DOUBLE AS share
FROM counted
ORDER BY source_format, messages DESC, phase
