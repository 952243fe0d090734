-- `(cont,vnfInstanceName,...)` runs as `LIKE '%...%'`, which a trigram index answers without
-- reading every row. pg_trgm ships with PostgreSQL and is a trusted extension: a database
-- owner may create it.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX vnf_instances_name_trgm ON vnf_instances USING gin (vnf_instance_name gin_trgm_ops);
