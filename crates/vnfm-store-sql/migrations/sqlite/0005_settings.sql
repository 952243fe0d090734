-- Deployment-wide settings shared by every replica (the NFVO connection, with its secret
-- sealed by the keyring), one JSON document per name.
CREATE TABLE settings (
    name       TEXT    PRIMARY KEY,
    value      TEXT    NOT NULL,
    updated_at INTEGER NOT NULL
);
