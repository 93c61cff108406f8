-- question: Which phase do assistant messages carry (commentary, final_answer, an explicit null, or none)?
-- result: one row per (source_format, phase), by source format then most messages first:
--   source_format VARCHAR, phase VARCHAR ('(null)': sent as null, '(absent)': no phase key),
--   messages BIGINT, share DOUBLE (of that source format's assistant messages)
-- params: none
WITH counted AS (  -- per-shard counts (phase_counts), summed
    SELECT source_format, phase, sum(messages) AS messages FROM phase_counts GROUP BY source_format, phase
),
-- totals by a join, not a window: DuckDB's window operator costs ~0.15 s of setup even on these few
-- rows, which was most of this query's time on a 10M-record run
totals AS (SELECT source_format, sum(messages) AS total FROM counted GROUP BY source_format)
SELECT
    c.source_format,
    c.phase,
    c.messages::BIGINT AS messages,
    (c.messages / t.total)::DOUBLE AS share
FROM counted AS c
JOIN totals AS t USING (source_format)
ORDER BY c.source_format, c.messages DESC, c.phase
