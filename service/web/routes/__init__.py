"""The dashboard pages, one module per resource."""
