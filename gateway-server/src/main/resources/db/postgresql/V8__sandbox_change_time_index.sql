-- The leader's prune (ChangeLog.PRUNE) takes the largest seq of the rows written before the retention bound,
-- max(seq + 0) WHERE change_ms < ?, every 30 s. This index lets it read just those rows, which it then removes, from
-- the index alone (seq is in it). Without it, PostgreSQL walked the primary key down from the newest row past every
-- row still within retention (up to the 200,000 the log keeps) on each prune.
CREATE INDEX sandbox_change_change_ms ON sandbox_change (change_ms, seq);
