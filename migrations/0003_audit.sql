-- The audit log: every change through any path (page, embedded API, admission of kubectl
-- writes), with the object before and after it (secrets redacted before they are written).

CREATE TABLE audit (
    id       TEXT PRIMARY KEY,   -- random, breaks ties between entries of the same microsecond
    at       BIGINT NOT NULL,    -- unix time, microseconds
    username TEXT NOT NULL,
    via      TEXT NOT NULL,      -- page, api, admission
    action   TEXT NOT NULL,      -- create, update, delete, enable, disable, ...
    kind     TEXT NOT NULL,      -- Loadbalancer, Lbticket, Lbrule, Secret, ...
    name     TEXT NOT NULL,
    project  TEXT NOT NULL,      -- '' when the object belongs to no project
    before   TEXT NOT NULL,      -- JSON, '' for a create
    after    TEXT NOT NULL       -- JSON, '' for a delete
);
-- The list is read newest first and paged by (at, id) (keyset, no OFFSET): each filter an
-- index serves ends in (at, id), so a page is an index range read of 51 rows, whatever the
-- table's size. The unfiltered list, the time range and the retention purge use the first.
CREATE INDEX audit_at ON audit (at, id);
CREATE INDEX audit_project_at ON audit (project, at, id);
CREATE INDEX audit_username_at ON audit (username, at, id);
CREATE INDEX audit_name_at ON audit (name, at, id);
