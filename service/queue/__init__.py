"""The queue: queue names, job submission, the broker, expiry and reconciling the store with Redis."""
