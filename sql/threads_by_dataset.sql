-- question: How many threads does each request log hold, how many requests per thread, and how much does dedupe to leaves save?
-- result: one row per dataset (input file), for runs with the threads step (no rows otherwise):
--   dataset VARCHAR, threads BIGINT, requests BIGINT (written and dropped), requests_per_thread DOUBLE,
--   items BIGINT (of every request), items_kept BIGINT (of the kept leaves: what keep=leaves writes),
--   items_saved_by_dedupe BIGINT (items - items_kept), redundancy_ratio DOUBLE (items / items_kept)
-- params: none
SELECT
    dataset,
    count(DISTINCT thread_id)::BIGINT AS threads,
    count(*)::BIGINT AS requests,
    (count(*) / count(DISTINCT thread_id))::DOUBLE AS requests_per_thread,
    sum(n_items)::BIGINT AS items,
    coalesce(sum(n_items) FILTER (WHERE kept_leaf), 0)::BIGINT AS items_kept,
    (sum(n_items) - coalesce(sum(n_items) FILTER (WHERE kept_leaf), 0))::BIGINT AS items_saved_by_dedupe,
    (sum(n_items) / nullif(sum(n_items) FILTER (WHERE kept_leaf), 0))::DOUBLE AS redundancy_ratio
FROM threads
GROUP BY dataset
ORDER BY dataset
