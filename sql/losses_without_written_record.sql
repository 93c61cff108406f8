-- question: Are there losses whose record is not among the written conversations? (an audit: no rows =
--   healthy; a loss belongs to a written record, a rejected record's losses live in rejected/)
-- result: one row per orphan loss: conversation_id VARCHAR, source_file VARCHAR, source_line BIGINT,
--   kind VARCHAR, path VARCHAR
-- params: none
SELECT l.conversation_id, l.source_file, l.source_line, l.kind, l.path
FROM losses AS l
ANTI JOIN conversations AS c USING (conversation_id)
ORDER BY l.source_file, l.source_line, l.path
