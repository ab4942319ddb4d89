-- Idempotency keys: the first request that carried a key, as its claim (`KeyClaim` as JSON
-- text: the key, the request's fingerprint, when, and what it answers). A claim is replaced only
-- once it is older than the caller's window (`at_ms`, milliseconds since the epoch, compared in
-- the same statement), so of requests racing for one key exactly one records its claim.

CREATE TABLE vwf_idempotency_keys (
    key text PRIMARY KEY,
    at_ms bigint NOT NULL,
    claim text NOT NULL
);
