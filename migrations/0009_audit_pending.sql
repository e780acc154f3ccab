-- Cluster mode: the writes the webhook allowed, waiting for the management cluster's watch to
-- show them committed. Each becomes an entry of `audit`, with the version it committed, once
-- the watch shows the object as it was allowed (`digest`: its spec, labels and annotations);
-- one whose commit never shows is dropped. Redacted, as `audit`'s columns are.
CREATE TABLE audit_pending (
    id       TEXT PRIMARY KEY,
    at       BIGINT NOT NULL,
    username TEXT NOT NULL,
    via      TEXT NOT NULL,
    action   TEXT NOT NULL,
    kind     TEXT NOT NULL,
    name     TEXT NOT NULL,
    project  TEXT NOT NULL,
    before   TEXT NOT NULL,
    digest   TEXT NOT NULL
);
CREATE INDEX audit_pending_object ON audit_pending (kind, name, at);
