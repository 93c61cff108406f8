-- question: Which kinds of loss did the conversion report, how often, and in how many written records?
--   (Additions, such as a filled default or a --set value, are not losses: they are listed last.)
-- result: one row per loss kind, losses first, most losses first:
--   kind VARCHAR, losses BIGINT, records BIGINT, share_of_written DOUBLE (records / written records),
--   addition BOOLEAN (true: chatlake added something, nothing was lost; loss_kinds.addition)
-- params: none
SELECT  -- per-shard counts (loss_counts), summed: a record's losses are in exactly one shard
    kind,
    sum(losses)::BIGINT AS losses,
    sum(records)::BIGINT AS records,
    (sum(records) / (SELECT sum(records) FROM record_counts WHERE status = 'written'))::DOUBLE
        AS share_of_written,
    coalesce(any_value(k.addition), false) AS addition
FROM loss_counts
LEFT JOIN loss_kinds AS k USING (kind)
GROUP BY kind
ORDER BY addition, losses DESC, kind
