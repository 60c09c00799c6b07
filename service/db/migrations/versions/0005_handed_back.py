"""jobs.handed_back and runs.handed_back: attempts a stopping worker handed back, not counted in max_attempts"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("handed_back", sa.Integer(), server_default="0", nullable=False))
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("handed_back", sa.Boolean(), server_default=sa.false(), nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("handed_back")
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_column("handed_back")
