-- The embedded Kubernetes-compatible API: objects of every simulated cluster, one monotonic
-- resourceVersion sequence per cluster, and the event log that watches resume from.

CREATE TABLE k8s_clusters (
    name      TEXT PRIMARY KEY,
    -- last resourceVersion handed out, and the newest one dropped from the event log
    last_rv   BIGINT NOT NULL,
    compacted BIGINT NOT NULL
);

CREATE TABLE k8s_objects (
    cluster   TEXT NOT NULL,
    resource  TEXT NOT NULL,   -- plural.group, e.g. lbtickets.ebcpaas.io, configmaps
    namespace TEXT NOT NULL,   -- '' when cluster-scoped
    name      TEXT NOT NULL,
    rv        BIGINT NOT NULL,
    labels    TEXT NOT NULL,   -- JSON object, for selectors without parsing the body
    body      TEXT NOT NULL,   -- the whole object as JSON
    PRIMARY KEY (cluster, resource, namespace, name)
);

CREATE TABLE k8s_events (
    cluster     TEXT NOT NULL,
    rv          BIGINT NOT NULL,
    resource    TEXT NOT NULL,
    namespace   TEXT NOT NULL,
    name        TEXT NOT NULL,
    type        TEXT NOT NULL, -- ADDED, MODIFIED, DELETED
    labels      TEXT NOT NULL,
    prev_labels TEXT NOT NULL, -- labels before a MODIFIED, so selector watches see objects leave
    body        TEXT NOT NULL,
    PRIMARY KEY (cluster, rv)
);

-- Bearer tokens of the embedded API, stored as SHA-256 hex digests.
CREATE TABLE api_tokens (
    digest     TEXT PRIMARY KEY,
    username   TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
