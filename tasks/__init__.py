"""Celery app, queues, tasks and beat schedule for cuprobe: thin, they call service/."""
