-- question: How many conversations were compacted, how often, and how much stays after the last compaction?
-- result: one row per source format:
--   source_format VARCHAR, conversations BIGINT, compacted BIGINT (conversations with a compaction item),
--   compaction_items BIGINT, max_per_conversation BIGINT,
--   avg_items_after_last DOUBLE (items after the last compaction, over compacted conversations; NULL: none),
--   encrypted_bytes BIGINT (length of the compactions' encrypted_content)
-- params: none
WITH per_conversation AS (  -- compaction items from the item index, joined to every conversation
    SELECT
        c.source_format,
        count(i.item_index) AS compactions,
        any_value(c.n_items) - 1 - max(i.item_index) AS after_last,
        sum(i.encrypted_bytes) AS encrypted_bytes
    FROM conversations AS c
    LEFT JOIN items AS i ON i.conversation_id = c.conversation_id AND i.type = 'compaction'
    GROUP BY c.conversation_id, c.source_format
)
SELECT
    source_format,
    count(*)::BIGINT AS conversations,
    count(*) FILTER (WHERE compactions > 0)::BIGINT AS compacted,
    sum(compactions)::BIGINT AS compaction_items,
    max(compactions)::BIGINT AS max_per_conversation,
    avg(after_last) FILTER (WHERE compactions > 0)::DOUBLE AS avg_items_after_last,
    coalesce(sum(encrypted_bytes), 0)::BIGINT AS encrypted_bytes
FROM per_conversation
GROUP BY source_format
ORDER BY source_format
