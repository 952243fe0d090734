-- The W3C trace context (`traceparent`) of the span a notification was written in (the
-- operation occurrence's, or the request's): its delivery, later and maybe on another
-- replica, continues that trace. NULL for rows written without tracing, or before this
-- migration: they are delivered as before, in a trace of their own.
ALTER TABLE outbox ADD COLUMN traceparent TEXT;
