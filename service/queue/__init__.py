"""The queue: job submission, the broker, expiry and reconciling the store with Redis (queue names: models.queues)."""
