-- question: Which item kinds and roles do the written conversations hold, per source format?
-- result: one row per (source_format, type, role), most items first:
--   source_format VARCHAR, type VARCHAR, role VARCHAR (NULL: the item has no role),
--   items BIGINT, conversations BIGINT (conversations holding at least one)
-- params: none
SELECT  -- per-shard counts (item_counts), summed: a conversation is in exactly one shard
    source_format,
    type,
    role,
    sum(items)::BIGINT AS items,
    sum(conversations)::BIGINT AS conversations
FROM item_counts
GROUP BY source_format, type, role
ORDER BY items DESC, source_format, type, role NULLS FIRST
