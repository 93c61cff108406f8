-- question: Why were records rejected? Reasons are grouped without their leading JSON path
--   ("$.input[3].content: expected ..." and "$.input[0].content: expected ..." are one reason).
-- result: one row per (stage, step, reason), most records first:
--   stage VARCHAR, step VARCHAR, reason VARCHAR, records BIGINT,
--   example_file VARCHAR, example_line BIGINT, example_reason VARCHAR (the first such record, exactly)
-- params: none
SELECT
    stage,
    step,
    regexp_replace(reason, '^\$[^ ]*: ', '') AS reason,
    count(*)::BIGINT AS records,
    arg_min(source_file, (source_file, source_line)) AS example_file,
    arg_min(source_line, (source_file, source_line))::BIGINT AS example_line,
    arg_min(rejected.reason, (source_file, source_line)) AS example_reason
FROM rejected
GROUP BY ALL
ORDER BY records DESC, stage, reason
