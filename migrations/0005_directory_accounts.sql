-- Where an account signs in: 'local' (its password hash here) or 'directory' (LDAP: its role and
-- memberships are what the directory's groups granted when last read, at synced_at, unix
-- microseconds; it has no password here).
ALTER TABLE users ADD COLUMN source TEXT NOT NULL DEFAULT 'local';
ALTER TABLE users ADD COLUMN synced_at BIGINT NOT NULL DEFAULT 0;
