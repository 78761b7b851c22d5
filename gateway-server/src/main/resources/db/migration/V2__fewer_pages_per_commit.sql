-- Two indexes that every lifecycle operation rewrote a page of, for queries that run rarely.
--
-- sandbox_pending: each operation set the pending transition in one commit and cleared it in the next, and each
-- commit rewrote the index's page. Only the recovery at start-up asks for the pending transitions; it reads the
-- sandbox table through.
DROP INDEX sandbox_pending;

-- request_completed: each completed request added an entry. Only the pruning of old records asked for it; it now walks
-- the table in insertion order (rowid), which is the order of create_ms, and stops where the records get young.
DROP INDEX request_completed;
