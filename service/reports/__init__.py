"""Sweep reports: an HTML page with plots and a Markdown summary."""
