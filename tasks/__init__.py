"""Celery app, queues and tasks: thin, they call service/."""
