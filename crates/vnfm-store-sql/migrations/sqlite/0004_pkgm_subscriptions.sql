-- VNF package management subscriptions live next to the lifecycle ones, told apart by kind
-- ('lcm' or 'pkgm'): one id space, so an outbox row's subscription_id names exactly one
-- subscription, whose credentials the deliverer looks up.
ALTER TABLE subscriptions ADD COLUMN kind TEXT NOT NULL DEFAULT 'lcm';
DROP INDEX subscriptions_duplicate;
CREATE INDEX subscriptions_duplicate ON subscriptions (kind, callback_uri, canonical_filter);
CREATE INDEX subscriptions_kind ON subscriptions (kind, id);
