-- question: Which phase do assistant messages carry (commentary, final_answer, an explicit null, or none)?
-- result: one row per (source_format, phase), by source format then most messages first:
--   source_format VARCHAR, phase VARCHAR ('(null)': sent as null, '(absent)': no phase key),
--   messages BIGINT, share DOUBLE (of that source format's assistant messages)
-- params: none
WITH counted AS (  -- per-shard counts (phase_counts), summed
    SELECT source_format, phase, sum(messages) AS messages FROM phase_counts GROUP BY source_format, phase
)
SELECT
    source_format,
    phase,
    messages::BIGINT AS messages,
    (messages / sum(messages) OVER (PARTITION BY source_format))::DOUBLE AS share
FROM counted
ORDER BY source_format, messages DESC, phase
