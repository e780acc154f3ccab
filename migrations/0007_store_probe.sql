-- One row that `/readyz` writes, in a transaction of its own, to learn whether the store can
-- take a write now (a full disk, a lost connection), not only answer a read.
CREATE TABLE store_probe (
    id BIGINT PRIMARY KEY,
    at BIGINT NOT NULL
);
