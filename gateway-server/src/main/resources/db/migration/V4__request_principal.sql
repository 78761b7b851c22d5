-- The principal that first used a request id (issue 28): a replay or a GetOperation by another principal learns
-- nothing of the original. '' is the anonymous principal of a gateway without authentication (and of every request
-- recorded before this migration).
ALTER TABLE request ADD COLUMN principal TEXT NOT NULL DEFAULT '';
