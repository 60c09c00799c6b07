"""sweeps, sweep cases and sweep findings"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sweeps",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("definition", sa.String(length=100), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("sanitizer_version", sa.String(length=50), nullable=True),
        sa.Column("driver", sa.String(length=50), nullable=True),
        sa.Column("summary", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("sweeps", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_sweeps_definition"), ["definition"], unique=False)
        batch_op.create_index(batch_op.f("ix_sweeps_started_at"), ["started_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_sweeps_state"), ["state"], unique=False)
    op.create_table(
        "sweep_cases",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("sweep_id", sa.String(length=32), nullable=False),
        sa.Column("key", sa.String(length=300), nullable=False),
        sa.Column("probe", sa.String(length=100), nullable=False),
        sa.Column("tool", sa.String(length=20), nullable=False),
        sa.Column("outcome", sa.String(length=20), nullable=False),
        sa.Column("flaky", sa.Boolean(), nullable=False),
        sa.Column("case", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["sweep_id"], ["sweeps.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("sweep_id", "key"),
    )
    with op.batch_alter_table("sweep_cases", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_sweep_cases_sweep_id"), ["sweep_id"], unique=False)
    op.create_table(
        "sweep_findings",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("sweep_id", sa.String(length=32), nullable=False),
        sa.Column("case_key", sa.String(length=300), nullable=False),
        sa.Column("signature", sa.String(length=500), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("seen", sa.String(length=20), nullable=True),
        sa.Column("finding", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["sweep_id"], ["sweeps.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("sweep_id", "case_key", "signature"),
    )
    with op.batch_alter_table("sweep_findings", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_sweep_findings_sweep_id"), ["sweep_id"], unique=False)


def downgrade() -> None:
    op.drop_table("sweep_findings")
    op.drop_table("sweep_cases")
    op.drop_table("sweeps")
