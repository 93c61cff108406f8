-- question: Which kinds of loss did the conversion report, how often, and in how many written records?
-- result: one row per loss kind, most losses first:
--   kind VARCHAR, losses BIGINT, records BIGINT, share_of_written DOUBLE (records / written records)
-- params: none
SELECT
    kind,
    count(*)::BIGINT AS losses,
    count(DISTINCT conversation_id)::BIGINT AS records,
    (count(DISTINCT conversation_id) / (SELECT count(*) FROM conversations))::DOUBLE AS share_of_written
FROM losses
GROUP BY kind
ORDER BY losses DESC, kind
