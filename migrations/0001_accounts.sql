-- Users, projects and sessions. Portable SQL: the same file runs on SQLite and PostgreSQL.

CREATE TABLE users (
    username      TEXT PRIMARY KEY,
    display_name  TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    role          TEXT NOT NULL CHECK (role IN ('admin', 'tenant')),
    created_at    BIGINT NOT NULL
);

CREATE TABLE projects (
    name         TEXT PRIMARY KEY,
    display_name TEXT NOT NULL
);

CREATE TABLE project_members (
    project  TEXT NOT NULL REFERENCES projects (name) ON DELETE CASCADE,
    username TEXT NOT NULL REFERENCES users (username) ON DELETE CASCADE,
    PRIMARY KEY (project, username)
);

-- A project is a set of namespaces per cluster; a namespace belongs to one project.
CREATE TABLE project_namespaces (
    project   TEXT NOT NULL REFERENCES projects (name) ON DELETE CASCADE,
    cluster   TEXT NOT NULL,
    namespace TEXT NOT NULL,
    PRIMARY KEY (cluster, namespace)
);

CREATE TABLE sessions (
    id          TEXT PRIMARY KEY,
    data        TEXT NOT NULL,
    expiry_date BIGINT NOT NULL
);
CREATE INDEX sessions_expiry ON sessions (expiry_date);

-- Small server-wide facts: the embedded API's admin token hash, whether the demo was seeded.
CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
