-- question: Do the files add up to the run summary (read == written + rejected + dropped, and the
--   summary's written / rejected equal the rows on disk)? (an audit: no rows = healthy; dropped:
--   the records threads:keep=leaves folded into their leaves, none for other runs)
-- result: one row per count that disagrees: count VARCHAR, in_summary BIGINT, on_disk BIGINT
-- params: none
WITH disk AS (
    SELECT (SELECT count(*) FROM conversations) AS written, (SELECT count(*) FROM rejected) AS rejected,
           (SELECT count(*) FROM threads WHERE status = 'dropped') AS dropped
),
checks AS (
    SELECT 'written' AS count, s.written::BIGINT AS in_summary, d.written::BIGINT AS on_disk
    FROM summary AS s, disk AS d
    UNION ALL
    SELECT 'rejected', s.rejected::BIGINT, d.rejected::BIGINT FROM summary AS s, disk AS d
    UNION ALL
    SELECT 'read', s.read::BIGINT, (d.written + d.rejected + d.dropped)::BIGINT FROM summary AS s, disk AS d
)
SELECT count, in_summary, on_disk FROM checks WHERE in_summary IS DISTINCT FROM on_disk ORDER BY count
