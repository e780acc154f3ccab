-- Sessions of a user that began before this instant (unix time, microseconds) are over: set by a
-- password reset, so that cookies from before it no longer sign anyone in.
ALTER TABLE users ADD COLUMN sessions_since BIGINT NOT NULL DEFAULT 0;
