"""jobs.label (a gate run's jobs), and findings' and sweep findings' signature_key (a finding's history, indexed)"""

from __future__ import annotations

import hashlib

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

BATCH = 5000


def _key(signature: str) -> str:
    # service.models.signature_key as of this revision: a migration never changes with the code it upgrades
    return hashlib.sha256(signature.encode()).hexdigest()[:16]


def _fill_keys(table: str) -> None:
    """signature_key for the rows already stored, a batch at a time."""
    bind = op.get_bind()
    rows = sa.table(table, sa.column("id", sa.Integer), sa.column("signature"), sa.column("signature_key"))
    last = 0
    while True:
        found = bind.execute(
            sa.select(rows.c.id, rows.c.signature).where(rows.c.id > last).order_by(rows.c.id).limit(BATCH)
        ).all()
        if not found:
            return
        bind.execute(
            sa.update(rows).where(rows.c.id == sa.bindparam("row_id")).values(signature_key=sa.bindparam("key")),
            [{"row_id": row_id, "key": _key(signature)} for row_id, signature in found],
        )
        last = found[-1][0]


def upgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("label", sa.String(length=200), nullable=True))
        batch_op.create_index(batch_op.f("ix_jobs_label"), ["label"], unique=False)
    for table in ("findings", "sweep_findings"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column("signature_key", sa.String(length=16), nullable=True))
        _fill_keys(table)
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.alter_column("signature_key", existing_type=sa.String(length=16), nullable=False)
            batch_op.create_index(batch_op.f(f"ix_{table}_signature_key"), ["signature_key"], unique=False)


def downgrade() -> None:
    for table in ("sweep_findings", "findings"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_index(batch_op.f(f"ix_{table}_signature_key"))
            batch_op.drop_column("signature_key")
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_jobs_label"))
        batch_op.drop_column("label")
