-- What a caller keeps of a request's first answer with its idempotency key, as bytes the store
-- does not read (the REST server's encoding of its HTTP answer). The answer is no longer made
-- inside the store's creating transaction: the key is committed there with the resource's id
-- only, and the caller keeps its answer after. The response_* columns of keys written before
-- this migration are no longer read; such a key is answered again from its resource.
ALTER TABLE idempotency_keys ADD COLUMN kept_answer BLOB;
