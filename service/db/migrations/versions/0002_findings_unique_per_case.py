"""findings: unique per (job, signature, case), so a batched run can report one defect in many cases;
signatures up to 500 characters (cuprobe bounds them at 400 with a hash of the rest)"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def _findings_0001_without_unique() -> sa.Table:
    """The findings table as 0001 made it, minus its unnamed unique constraint: batch mode's copy source."""
    return sa.Table(
        "findings",
        sa.MetaData(),
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("job_id", sa.String(length=32), nullable=False),
        sa.Column("signature", sa.String(length=200), nullable=False),
        sa.Column("tool", sa.String(length=20), nullable=False),
        sa.Column("kind", sa.String(length=100), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("finding", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.Index("ix_findings_job_id", "job_id"),
    )


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.drop_constraint("findings_job_id_signature_key", "findings", type_="unique")
        op.alter_column("findings", "signature", type_=sa.String(length=500), existing_nullable=False)
        op.add_column("findings", sa.Column("case_id", sa.String(length=500), server_default="", nullable=False))
        op.create_unique_constraint(
            "uq_findings_job_signature_case", "findings", ["job_id", "signature", "case_id"]
        )
        return
    # SQLite cannot drop a constraint: batch mode copies the rows into a new table built from a copy source
    # that leaves 0001's unnamed unique constraint out.
    with op.batch_alter_table("findings", recreate="always", copy_from=_findings_0001_without_unique()) as batch:
        batch.alter_column("signature", type_=sa.String(length=500), existing_nullable=False)
        batch.add_column(sa.Column("case_id", sa.String(length=500), server_default="", nullable=False))
        batch.create_unique_constraint("uq_findings_job_signature_case", ["job_id", "signature", "case_id"])


def downgrade() -> None:
    raise NotImplementedError("0002 is not reversible: two findings that differ only by case cannot be merged")
