-- The version a change committed: the cluster and the resourceVersion its store gave it. One
-- entry per committed change: the embedded API writes the entry in the transaction that stores
-- the object; a page writes its entry once the API answered; a second entry of one version
-- (the page's, after the store's) is not written.
ALTER TABLE audit ADD COLUMN cluster TEXT NOT NULL DEFAULT '';
ALTER TABLE audit ADD COLUMN rv BIGINT;
CREATE UNIQUE INDEX audit_version ON audit (cluster, kind, name, rv);
