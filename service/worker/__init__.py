"""The worker side: the Celery worker command lines, and running one claimed job."""
