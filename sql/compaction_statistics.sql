-- question: How many conversations were compacted, how often, and how much stays after the last compaction?
-- result: one row per source format:
--   source_format VARCHAR, conversations BIGINT, compacted BIGINT (conversations with a compaction item),
--   compaction_items BIGINT, max_per_conversation BIGINT,
--   avg_items_after_last DOUBLE (items after the last compaction, over compacted conversations; NULL: none),
--   encrypted_bytes BIGINT (length of the compactions' encrypted_content)
-- params: none
SELECT  -- per-shard counts (record_counts), summed: a record is in exactly one shard
    source_format,
    sum(records)::BIGINT AS conversations,
    sum(compacted)::BIGINT AS compacted,
    sum(compactions)::BIGINT AS compaction_items,
    max(max_compactions)::BIGINT AS max_per_conversation,
    (sum(items_after_last_compaction) / nullif(sum(compacted), 0))::DOUBLE AS avg_items_after_last,
    sum(compaction_encrypted_bytes)::BIGINT AS encrypted_bytes
FROM record_counts
WHERE status = 'written'
GROUP BY source_format
ORDER BY source_format
