-- question: Which item kinds and roles do the written conversations hold, per source format?
-- result: one row per (source_format, type, role), most items first:
--   source_format VARCHAR, type VARCHAR, role VARCHAR (NULL: the item has no role),
--   items BIGINT, conversations BIGINT (conversations holding at least one)
-- params: none
SELECT
    source_format,
    type,
    role,
    count(*)::BIGINT AS items,
    count(DISTINCT conversation_id)::BIGINT AS conversations
FROM items
GROUP BY ALL
ORDER BY items DESC, source_format, type, role NULLS FIRST
