-- question: Which kinds of loss did the conversion report, how often, and in how many written records?
-- result: one row per loss kind, most losses first:
--   kind VARCHAR, losses BIGINT, records BIGINT, share_of_written DOUBLE (records / written records)
-- params: none
SELECT  -- per-shard counts (loss_counts), summed: a record's losses are in exactly one shard
    kind,
    sum(losses)::BIGINT AS losses,
    sum(records)::BIGINT AS records,
    (sum(records) / (SELECT sum(records) FROM record_counts WHERE status = 'written'))::DOUBLE
        AS share_of_written
FROM loss_counts
GROUP BY kind
ORDER BY losses DESC, kind
