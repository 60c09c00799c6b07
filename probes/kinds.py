"""Finding kinds as cuprobe names them (slugs of sanitizer record kinds), shared by probes and parser."""

UNINITIALIZED_GLOBAL_READ = "uninitialized-global-read"
INVALID_GLOBAL_WRITE = "invalid-global-write"
SHARED_MEMORY_HAZARD = "shared-memory-race"
SYNC_INVALID_ARGUMENT = "barrier-error-invalid-arguments"
